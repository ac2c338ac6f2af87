"""python -m mycel.insight --logdir DIR: the dashboard (mycel-insight)."""
from mycel.insight.dashboard import main

main()
