"""Privacy accounting."""
from mycel.armour.privacy.diff_privacy.monitor.monitor import PrivacyMonitorFactory, RDPMonitor, ZCDPMonitor
