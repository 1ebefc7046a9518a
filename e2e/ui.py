"""UI checks in a real browser: Playwright from PyPI driving Debian's chromium-headless-shell.

1. sign in through the simple auth manager's login form (the generated admin password);
2. for both connection types, the Add Connection form shows Base URL, API key and every extra
   field of ``airflow_provider_linkstats.hooks.connection.EXTRA_FIELDS`` with its default and description;
3. a connection added through the form passes the Test button;
4. the campaign run's create task shows the "Short URL" extra link, pointing at the link's short URL.

Each view is saved as a PNG in e2e-output/.
"""

from __future__ import annotations

import json
from pathlib import Path

from airflow_provider_linkstats.hooks.connection import CONNECTION_TYPES, EXTRA_FIELDS, RELABELING

BROWSER = "/usr/bin/chromium-headless-shell"
# Flags for this machine: no sandbox as root, and nothing that calls out to Google's services.
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 60_000
# Airflow 3.3.2's row "Test Connection" button posts `"port": 0` for a connection stored without a
# port, and the API then refuses to reuse the stored (masked) API key: HTTP 400 with this text.
PORT_BUG = "The host or port to test differs from the stored connection"


class UiCheck:
    def __init__(self, page, base: str, out: Path, say) -> None:
        self.page, self.base, self.out, self.say = page, base, out, say
        self.shots: list[str] = []
        self.problems: list[str] = []

    def shot(self, name: str) -> None:
        path = self.out / f"ui-{len(self.shots) + 1:02d}-{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        self.shots.append(path.name)

    def expect(self, condition: bool, what: str) -> None:
        if not condition:
            self.problems.append(what)
            self.say(f"UI PROBLEM: {what}")

    def sign_in(self, password: str) -> None:
        page = self.page
        page.goto(self.base + "/", timeout=TIMEOUT_MS)
        page.get_by_label("Username").fill("admin")
        page.get_by_label("Password").fill(password)
        self.shot("login")
        page.get_by_role("button", name="Sign in").click()
        page.wait_for_url(lambda url: "/auth/login" not in url, timeout=TIMEOUT_MS)

    def open_form(self, display_name: str):
        page = self.page
        page.goto(self.base + "/connections", timeout=TIMEOUT_MS)
        page.get_by_role("button", name="Add Connection").click()
        dialog = page.get_by_role("dialog")
        dialog.get_by_role("combobox").fill(display_name)
        page.keyboard.press("Enter")
        dialog.get_by_label(RELABELING["host"]).wait_for(timeout=TIMEOUT_MS)
        return dialog

    def check_form(self, conn_type: str, fill: dict[str, str] | None) -> None:
        """The standard fields relabelled, then every extra with its default and description."""
        _, display_name, _, example_url = CONNECTION_TYPES[conn_type]
        dialog = self.open_form(display_name)
        host, key = dialog.get_by_label(RELABELING["host"]), dialog.get_by_label(RELABELING["password"])
        self.expect(host.get_attribute("placeholder") == example_url, f"{conn_type}: Base URL placeholder")
        self.expect(key.get_attribute("type") == "password", f"{conn_type}: API key is not a password input")
        for hidden in ("login", "schema", "port"):
            self.expect(dialog.locator(f"input[name={hidden}]").count() == 0, f"{conn_type}: {hidden} shown")
        if fill:
            dialog.get_by_label("Connection ID").fill(fill["conn_id"])
            host.fill(fill["host"])
            key.fill(fill["password"])
        self.shot(f"{conn_type}-standard-fields")
        dialog.get_by_role("button", name="Extra Fields", exact=True).click()
        text = dialog.inner_text()
        for name, (label, kind, default, description) in EXTRA_FIELDS.items():
            field = dialog.locator(f"[name=element_{name}]")
            self.expect(field.count() == 1, f"{conn_type}: extra {name} has no input")
            self.expect(label in text, f"{conn_type}: label {label!r} missing")
            self.expect(description in text, f"{conn_type}: description of {name} missing")
            if field.count() != 1:
                continue
            if kind == "boolean":
                shown: object = field.is_checked()
            elif kind in ("number", "integer"):
                raw = field.input_value()
                shown = float(raw) if raw else None
                default = float(default) if default is not None else None
            else:
                shown = field.input_value() or None
            self.expect(shown == default, f"{conn_type}: extra {name} shows {shown!r}, default is {default!r}")
        self.shot(f"{conn_type}-extra-fields")
        if fill:
            dialog.get_by_role("button", name="Save").click()
            dialog.wait_for(state="hidden", timeout=TIMEOUT_MS)
        else:
            dialog.get_by_role("button", name="Close").click()

    def press_test(self, conn_id: str) -> dict:
        page = self.page
        page.goto(self.base + "/connections", timeout=TIMEOUT_MS)
        row = page.get_by_role("row").filter(has_text=conn_id)
        with page.expect_response(lambda r: r.url.endswith("/api/v2/connections/test"), timeout=TIMEOUT_MS) as info:
            row.get_by_role("button", name="Test Connection").click()
        answer = info.value
        page.wait_for_timeout(1000)  # let the toast render for the screenshot
        try:
            body = answer.json()
        except ValueError:
            body = {"detail": answer.text()[:200]}
        return {"http": answer.status, **body}

    def test_connection(self, conn_id: str) -> None:
        result = self.press_test(conn_id)
        if result["http"] == 400 and PORT_BUG in str(result.get("detail")):
            self.say(
                "Test button: Airflow 3.3.2 posts port 0 for a connection without a port (HTTP 400); "
                "pressing it again with the port sent as null, as the edit form does"
            )
            self.shot(f"{conn_id}-test-port-bug")

            def port_as_null(route) -> None:
                body = json.loads(route.request.post_data or "{}")
                if body.get("port") == 0:
                    body["port"] = None
                route.continue_(post_data=json.dumps(body))

            self.page.route("**/api/v2/connections/test", port_as_null)
            result = self.press_test(conn_id)
            self.page.unroute("**/api/v2/connections/test")
        self.shot(f"{conn_id}-test")
        toast = self.page.get_by_text("Test Connection Successful")
        self.say(f"Test button on {conn_id}: HTTP {result['http']}, {result.get('status')}, {result.get('message')!r}")
        self.expect(result["http"] == 200 and result.get("status") is True, f"Test of {conn_id} failed: {result}")
        self.expect(toast.count() > 0, 'no "Test Connection Successful" toast')

    def short_url_link(self, dag_id: str, run_id: str, record: dict) -> None:
        """The extra links sit in the task instance's Details tab, one button per link."""
        from urllib.parse import quote

        page = self.page
        url = f"{self.base}/dags/{dag_id}/runs/{quote(run_id, safe='')}/tasks/create_links/mapped/0"
        page.goto(url, timeout=TIMEOUT_MS)
        page.get_by_text("Details", exact=True).click()
        link = page.get_by_role("link", name="Short URL")
        try:
            link.first.wait_for(timeout=20_000)
        finally:
            self.shot("create_links-short-url")
        href = link.first.get_attribute("href")
        self.say(f'create_links[0] extra link "Short URL" -> {href} (link {record.get("alias")})')
        self.expect(
            href == record.get("short_url"), f"Short URL is {href!r}, the link's is {record.get('short_url')!r}"
        )


def created_link(api, campaign, emulator_url: str, say) -> tuple[dict | None, list[str]]:
    """The record create_links[0] returned (its XCom), and what the REST API lists as its extra links."""
    prefix = f"/dags/{campaign.dag_id}/dagRuns/{campaign.run_id}/taskInstances/create_links"
    try:
        record = api.call("GET", f"{prefix}/xcomEntries/return_value", params={"map_index": 0, "deserialize": True})
    except RuntimeError as error:
        return None, [f"no record from create_links[0], so no extra link to check ({error})"]
    record = record["value"] if not isinstance(record["value"], str) else json.loads(record["value"])
    say(
        f"extra links of create_links[0] in the REST API: {api.call('GET', f'{prefix}/links', params={'map_index': 0})}"
    )
    if record.get("short_url") != f"{emulator_url}/{record.get('alias')}":
        return None, [f"create_links[0] returned short_url {record.get('short_url')!r}"]
    return record, []


def check(api, base: str, campaign, emulator_url: str, connection_host: str, api_key: str, out: Path, say) -> bool:
    from playwright.sync_api import sync_playwright

    record, problems = created_link(api, campaign, emulator_url, say)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=BROWSER, args=FLAGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(TIMEOUT_MS)
            ui = UiCheck(page, base, out, say)
            try:
                ui.sign_in(api.password())
                for conn_type in CONNECTION_TYPES:
                    conn_id = f"e2e_ui_{conn_type}"
                    ui.check_form(conn_type, {"conn_id": conn_id, "host": connection_host, "password": api_key})
                    ui.test_connection(conn_id)
                if record:
                    ui.short_url_link(campaign.dag_id, campaign.run_id, record)
            except Exception as error:  # a missing element: keep what the page looked like
                ui.problems.append(f"{type(error).__name__}: {str(error).splitlines()[0]}")
                ui.shot("failure")
        finally:
            browser.close()
    say("screenshots: " + ", ".join(ui.shots))
    ui.problems += problems
    for problem in ui.problems:
        say(f"UI PROBLEM: {problem}")
    return not ui.problems
