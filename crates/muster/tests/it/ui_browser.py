"""Drives the dashboard in headless chromium (Playwright), as ui.rs's test
asks: every page loads with no script error, the overview shows every node
and the queue, a pending job's page says why it waits and when it should
start, cancelling from the page cancels the job, another user cannot, the
jobs page updates itself when a job is submitted, and a node whose health
check failed shows the failure on its page. Screenshots of each
page go to the directory given. Exits non-zero with the reason on failure.

Usage: ui_browser.py CONFIG.json  (url, chromium, shots, nodes, alice, bob,
pending, running, submit_body, sick)
"""

import json
import sys
import urllib.request

from playwright.sync_api import sync_playwright


def main():
    cfg = json.load(open(sys.argv[1]))
    url = cfg["url"]
    errors = []
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=cfg["chromium"],
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
        )

        def session(token, forbidden_ok=False):
            ctx = browser.new_context(viewport={"width": 1100, "height": 900})
            page = ctx.new_page()
            page.on("pageerror", lambda e: errors.append(f"{page.url}: {e}"))
            # The other user's refused action answers 403, which the
            # browser logs; nothing else may log an error.
            page.on(
                "console",
                lambda m: m.type == "error"
                and not (forbidden_ok and "status of 403" in m.text)
                and errors.append(f"{page.url}: console: {m.text}"),
            )
            page.goto(url + "/")
            assert page.locator("#token").count() == 1, "no login form without a token"
            page.fill("#token", token)
            page.click("button[type=submit]")
            page.wait_for_url(url + "/")
            return page

        page = session(cfg["alice"])
        for path, name in [
            ("/", "overview"),
            ("/jobs", "jobs"),
            (f"/jobs/{cfg['pending']}", "job-pending"),
            (f"/jobs/{cfg['running']}", "job-running"),
            (f"/nodes/{cfg['nodes'][0]}", "node"),
            ("/history", "history"),
            ("/fairshare", "fairshare"),
            ("/reservations", "reservations"),
            ("/sim", "sim"),
        ]:
            resp = page.goto(url + path)
            assert resp.status == 200, f"{path}: status {resp.status}"
            assert page.locator("h1").count() == 1, f"{path}: no heading"
            page.screenshot(path=f"{cfg['shots']}/{name}.png", full_page=True)

        # The overview: every node, and the queue.
        page.goto(url + "/")
        shown = page.locator("#nodes [data-node]").evaluate_all(
            "els => els.map(e => e.getAttribute('data-node'))"
        )
        assert sorted(shown) == sorted(cfg["nodes"]), f"nodes shown {shown}"
        queue = page.locator("#queue").inner_text()
        assert "1 running" in queue and "pending" in queue, f"queue: {queue}"

        # A node whose health check failed: its page lists the run.
        if cfg.get("sick"):
            sick = cfg["sick"]
            page.goto(url + f"/nodes/{sick['node']}")
            health = page.locator("#health").inner_text()
            assert "failed" in health and sick["exit"] in health, f"health: {health}"
            assert sick["output"] in health, f"health: {health}"
            page.screenshot(path=f"{cfg['shots']}/node-health.png", full_page=True)
            page.goto(url + f"/nodes/{cfg['nodes'][0]}")
            health = page.locator("#health").inner_text()
            assert "passed" in health and "failed" not in health, f"healthy node: {health}"

        # A pending job: why it waits and its expected start.
        page.goto(url + f"/jobs/{cfg['pending']}")
        why = page.locator("#explain").inner_text()
        assert "It waits because" in why, why
        assert "Expected start" in why, why

        # Phone width: the grid and tables still fit (no horizontal page scroll).
        page.set_viewport_size({"width": 380, "height": 800})
        page.goto(url + "/")
        wide = page.evaluate("document.documentElement.scrollWidth")
        assert wide <= 400, f"overview is {wide}px wide at phone width"
        page.screenshot(path=f"{cfg['shots']}/overview-phone.png", full_page=True)
        page.set_viewport_size({"width": 1100, "height": 900})

        # Keyboard: the first Tab reaches the skip link, then the navigation.
        page.goto(url + "/")
        page.keyboard.press("Tab")
        first = page.evaluate("document.activeElement.textContent")
        assert first == "Skip to content", f"first focus: {first}"

        # Live: the jobs page shows a job submitted after it loaded.
        if cfg.get("live"):
            page.goto(url + "/jobs")
            req = urllib.request.Request(
                url + "/slurm/v0.0.38/job/submit",
                data=cfg["submit_body"].encode(),
                headers={"X-SLURM-USER-TOKEN": cfg["alice"], "Content-Type": "application/json"},
                method="POST",
            )
            new_id = json.load(urllib.request.urlopen(req))["job_id"]
            page.wait_for_selector(f"a[href='/jobs/{new_id}']", timeout=20000)

        # Another user sees no buttons on alice's job and cannot cancel it.
        if cfg.get("bob"):
            other = session(cfg["bob"], forbidden_ok=True)
            other.goto(url + f"/jobs/{cfg['pending']}")
            assert other.locator("#actions button").count() == 0, "bob sees buttons"
            token = other.goto(url + "/sim") and other.locator("input[name=csrf]").first.get_attribute("value")
            with other.expect_navigation():
                other.evaluate(
                """([id, token]) => { const f = document.createElement('form');
                f.method = 'post'; f.action = '/jobs/' + id + '/cancel';
                const i = document.createElement('input'); i.name = 'csrf'; i.value = token;
                f.appendChild(i); document.body.appendChild(f); f.submit(); }""",
                [cfg["pending"], token],
                )
            text = other.locator("main").inner_text()
            assert "Access/permission denied" in text, f"bob's cancel: {text}"
            other.context.close()

        # The owner cancels from the page.
        page.goto(url + f"/jobs/{cfg['pending']}")
        page.click("#actions button[value=cancel]")
        page.wait_for_url(f"**/jobs/{cfg['pending']}?done=cancel")
        state = page.locator("td:text-is('JobState') + td").inner_text()
        assert state == "CANCELLED", f"after cancel: {state}"
        page.screenshot(path=f"{cfg['shots']}/job-cancelled.png", full_page=True)
        browser.close()
    if errors:
        print("script errors:\n" + "\n".join(errors))
        sys.exit(1)
    print("ok")


main()
