"""Driving the dashboard in a real headless Chromium (Debian's chromium + chromium-driver, through
Selenium): a live server on loopback over a log directory, and a browser that waits for a page to
finish drawing. Shared by test_insight_browser.py and scripts/insight_screenshots.py."""
import contextlib
import shutil
import threading

CHROMIUM = ("chromium", "chromium-browser", "google-chrome")
DRIVER = "chromedriver"


def browser_missing():
    """Why a browser test cannot run here (None when it can)."""
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (scripts/setup installs it)"
    if not any(shutil.which(c) for c in CHROMIUM):
        return "chromium is not installed (scripts/setup installs Debian's chromium)"
    if not shutil.which(DRIVER):
        return "chromedriver is not installed (scripts/setup installs Debian's chromium-driver)"
    return None


@contextlib.contextmanager
def live_server(logdir):
    """The dashboard over `logdir` on a free loopback port; yields its base URL."""
    from mycel.insight.dashboard import serve
    srv = serve(str(logdir), port=0)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()


@contextlib.contextmanager
def chromium(width=1400, height=900):
    """A headless Chromium driven by Selenium with the system's chromedriver."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    binary = next(shutil.which(c) for c in CHROMIUM if shutil.which(c))
    opts.binary_location = binary
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              f"--window-size={width},{height}", "--disable-extensions", "--no-first-run"):
        opts.add_argument(a)
    driver = webdriver.Chrome(service=Service(shutil.which(DRIVER)), options=opts)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def open_page(driver, url, timeout=20):
    """Loads url and waits until the page says it has drawn (body[data-ready])."""
    from selenium.webdriver.support.ui import WebDriverWait
    driver.get(url)
    WebDriverWait(driver, timeout).until(
        lambda d: d.execute_script("return document.body.dataset.ready === '1'"))


def plotly_data(driver, div):
    """The traces plotly drew in `div` (an element id or a CSS selector): gd.data as JSON."""
    return driver.execute_script(
        "const gd = document.getElementById(arguments[0]) || document.querySelector(arguments[0]);"
        "return JSON.parse(JSON.stringify(gd.data));", div)
