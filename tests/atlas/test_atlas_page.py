"""The atlas page (kapi context atlas --html) in headless Chromium.

Usage: python3 test_atlas_page.py PAGE EXPECT SHOTS

PAGE is the page kapi wrote; EXPECT a JSON file of what the fixture log
holds (written by tests/suite/atlas_page.rs); SHOTS the folder the
screenshots go to. Opens the page from a file:// URL with every request but
the page itself refused and recorded, and fails on any console error, page
error, dialog or request that leaves the file. Drives Debian's chromium
(CHROMIUM, default /usr/bin/chromium) with Playwright; never downloads a
browser. Exits 0 when every check passes; prints each failure otherwise.
"""
import io
import json
import os
import sys
import tempfile

from PIL import Image
from playwright.sync_api import expect as see, sync_playwright

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync",
        "--disable-default-apps", "--disable-extensions"]

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what, flush=True)
    else:
        print("ok:", what, flush=True)


def launch(pw, user_data):
    return pw.chromium.launch_persistent_context(
        user_data, executable_path=os.environ.get("CHROMIUM", "/usr/bin/chromium"),
        headless=True, args=ARGS, viewport={"width": 1280, "height": 900},
        service_workers="block", offline=True)


def watch(context, page_url, problems):
    """Refuse and record every request but the page's own file."""
    def route(r):
        if r.request.url.split("#")[0] == page_url:
            r.continue_()
        else:
            problems.append("request: " + r.request.url)
            r.abort()
    context.route("**/*", route)
    context.on("request", lambda req: None if req.url.split("#")[0] == page_url
               else problems.append("request seen: " + req.url))


def listen(page, problems):
    page.on("console", lambda m: problems.append("console %s: %s" % (m.type, m.text))
            if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append("page error: %s" % e))
    page.on("dialog", lambda d: (problems.append("dialog: " + d.message), d.dismiss()))


def colours(png):
    """How many distinct colours a screenshot holds (a blank one has one or two)."""
    img = Image.open(io.BytesIO(png)).convert("RGB")
    img.thumbnail((640, 640))
    return len(img.getcolors(maxcolors=1 << 24))


def shot(page, shots, name):
    png = page.screenshot(full_page=False)
    with open(os.path.join(shots, name + ".png"), "wb") as f:
        f.write(png)
    n = colours(png)
    check(n >= 12, "the %s screenshot is not blank (%d colours)" % (name, n))


def rows(page):
    return page.eval_on_selector_all("#rules-body tr", "trs => trs.map(t => t.dataset.id)")


def main():
    page_path, expect_path, shots = sys.argv[1], sys.argv[2], sys.argv[3]
    expect = json.load(open(expect_path))
    os.makedirs(shots, exist_ok=True)
    url = "file://" + os.path.abspath(page_path)
    problems = []
    with sync_playwright() as pw, tempfile.TemporaryDirectory() as user_data:
        context = launch(pw, user_data)
        watch(context, url, problems)
        page = context.new_page()
        listen(page, problems)
        page.goto(url + "#rules")
        page.wait_for_selector("html[data-ready='1']", timeout=15000)

        # --- Rules in force: every subject, with its status ---
        ids = rows(page)
        check(sorted(ids) == sorted(expect["subjects"]), "the table lists every subject: %s" % ids)
        for sid, status in expect["status"].items():
            got = page.text_content("#rules-body tr[data-id='%s'] .status" % sid)
            check(got == status, "%s is %s in the table (got %s)" % (sid[:10], status, got))
        # The hostile rule renders as text; nothing in it ran.
        hostile = page.text_content("#rules-body tr[data-id='%s'] td.use" % expect["hostile"]["id"])
        check(hostile == expect["hostile"]["use"], "the hostile rule's text is shown as text: %r" % hostile)
        avoided = page.text_content("#rules-body tr[data-id='%s'] td.avoid-cell" % expect["hostile"]["id"])
        check(avoided == expect["hostile"]["avoid"], "its avoided form as text: %r" % avoided)
        check(page.evaluate("window.pwned === undefined"), "no script from the log ran")
        check(page.evaluate("document.scripts.length") == 2, "the page holds its two script blocks only")
        check(page.evaluate("document.images.length") == 0, "no image element came from the log")
        note = page.text_content("#rules-body tr[data-id='%s'] td.use" % expect["note"]["id"])
        check(note == expect["note"]["text"], "a note with U+2028 reads back whole: %r" % note)
        header = page.text_content("#made")
        check(expect["tip"][:12] in header, "the header names the log's tip: %s" % header)
        check(expect["made_at"] in header, "and the instant the page was made")
        # Labels for every control.
        check(page.get_by_role("searchbox", name="Text", exact=True).count() == 1, "the Text filter has a label")
        for label in ["Status", "Kind", "Where", "Actor"]:
            check(page.get_by_role("combobox", name=label, exact=True).count() == 1, "the %s filter has a label" % label)

        # --- Filters ---
        page.select_option("#f-status", "established")
        check(sorted(rows(page)) == sorted(expect["established"]), "status=established: %s" % rows(page))
        page.select_option("#f-status", "")
        page.fill("#f-text", "fastcast")
        see(page.locator("#rules-body tr")).to_have_count(1)
        check(rows(page) == [expect["rival"]], "text 'fastcast': the rival only")
        page.fill("#f-text", "")
        see(page.locator("#rules-body tr")).to_have_count(len(expect["subjects"]))
        page.select_option("#f-where", "place=no")
        check(sorted(rows(page)) == sorted(expect["within_no"]), "where place=no: within Norway: %s" % rows(page))
        page.select_option("#f-where", "")
        page.select_option("#f-actor", "person:ada@example.com")
        check(sorted(rows(page)) == sorted(expect["by_ada"]), "actor ada: what she stated or decided: %s" % rows(page))
        page.click("#f-clear")
        see(page.locator("#rules-body tr")).to_have_count(len(expect["subjects"]))
        # Sorting by the preferred form, both ways.
        page.click("th[data-key='use'] button")
        check(page.get_attribute("th[data-key='use']", "aria-sort") == "ascending", "sorted by the preferred form")
        uses = page.eval_on_selector_all("#rules-body td.use", "tds => tds.map(t => t.textContent.toLowerCase())")
        check(uses == sorted(uses), "ascending: %s" % uses)
        page.click("th[data-key='use'] button")
        uses = page.eval_on_selector_all("#rules-body td.use", "tds => tds.map(t => t.textContent.toLowerCase())")
        check(uses == sorted(uses, reverse=True), "then descending")
        shot(page, shots, "rules")

        # --- Keyboard: the tabs move with the arrow keys ---
        page.focus("#tab-rules")
        page.keyboard.press("ArrowRight")
        check(page.get_attribute("#tab-history", "aria-selected") == "true", "ArrowRight selects History")
        check(page.evaluate("document.activeElement.id") == "tab-history", "and focuses it")
        page.keyboard.press("End")
        check(page.get_attribute("#tab-review", "aria-selected") == "true", "End selects the last view")
        page.keyboard.press("Home")

        # --- History: select a rule, see its chain and its track ---
        page.click("#rules-body tr[data-id='%s'] td.id button" % expect["quick"])
        check(page.is_visible("#view-history"), "choosing an id opens History")
        chain = page.eval_on_selector_all("#chain-changes li", "lis => lis.map(l => l.dataset.to)")
        check(chain == ["suggested", "established"], "its chain: %s" % chain)
        track = page.eval_on_selector_all("#track rect[data-status]", "rs => rs.map(r => r.dataset.status)")
        check(track == ["suggested", "established"], "its status track: %s" % track)
        check(page.locator("#track rect:not([data-status])").count() == 1, "and its window on the effective clock")
        bars = page.locator("#timeline-svg g rect").count()
        check(bars > 0, "the operations are drawn (%d bars)" % bars)
        ticks = page.locator("#timeline-svg line[data-bound]").count()
        check(ticks >= 1, "window boundaries are drawn on the effective clock")
        page.fill("#h-find", "fastcast")
        check(page.locator("#h-matches button").count() == 1, "find a rule by its text")
        page.click("#h-matches button")
        chain = page.eval_on_selector_all("#chain-changes li", "lis => lis.map(l => l.dataset.to)")
        check(chain == ["suggested", "dropped"], "the rival's chain: %s" % chain)
        page.evaluate("location.hash = '#rules'")
        page.click("#rules-body tr[data-id='%s'] td.id button" % expect["quick"])
        page.evaluate("window.scrollTo(0, 0)")
        shot(page, shots, "history")

        # --- Where: the places as a tree, with the rules stated at each ---
        page.click("#tab-where")
        check(page.locator("details[data-axis='place']").count() == 1, "the place axis is a node")
        oslo = page.locator("details[data-axis='place'] details[data-value='oslo']").first
        check(oslo.count() == 1, "oslo is in the tree")
        norway = page.locator("details[data-axis='place'] details[data-value='no'] > summary").first.text_content()
        check("0 stated here, 2 within" in norway, "Norway holds the Oslo and Bergen rules, each once: %s" % norway)
        check(oslo.get_attribute("open") is not None, "the branch that leads to a rule is open")
        text = oslo.text_content()
        check("Quickcast" in text, "the Quickcast rule is stated at oslo: %s" % text[:200])
        shot(page, shots, "where")

        # --- What awaits a person: the digest, with copyable commands ---
        page.click("#tab-review")
        items = page.eval_on_selector_all("#awaiting article", "as => as.map(a => a.dataset.id)")
        check(sorted(items) == sorted(expect["awaiting"]), "the awaiting items: %s" % items)
        lines = page.eval_on_selector_all("#awaiting code", "cs => cs.map(c => c.textContent)")
        for line in expect["commands"]:
            check(line in lines, "offers %s" % line)
        check(not any("workspace" in line for line in lines), "never offers to widen beyond the project")
        page.click("#awaiting button[aria-label^='Copy']")
        see(page.locator("#copied")).not_to_be_empty()
        said = page.text_content("#copied")
        check(lines[0] in said, "a command is copied (or shown to copy): %s" % said)
        shot(page, shots, "review")

        # --- 200% zoom: a 640 px wide window reads without sideways scrolling ---
        page.set_viewport_size({"width": 640, "height": 900})
        for view in ["rules", "history", "where", "review"]:
            page.evaluate("location.hash = '#%s'" % view)
            page.wait_for_timeout(50)
            wide = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            check(wide <= 1, "%s at 200%% zoom fits the width (over by %d px)" % (view, wide))
        context.close()

    for p in problems:
        failures.append(p)
        print("FAIL:", p)
    if failures:
        print("%d failure(s)" % len(failures))
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
