/// The console's one stylesheet, served from `/console/static/console.css` (the
/// Content-Security-Policy allows styles from the console's own origin only: no inline style).
enum ConsoleStyle {
    static let css = """
        :root { --fg: #1d1d1f; --muted: #5f6368; --line: #d2d2d7; --accent: #0b57d0; --bad: #b3261e; --good: #146c2e; --warn: #8a5300; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 15px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: #fafafa; }
        a { color: var(--accent); }
        a:focus, button:focus, input:focus, select:focus, summary:focus { outline: 3px solid #f4b400; outline-offset: 2px; }
        .skip { position: absolute; left: -999px; }
        .skip:focus { left: 8px; top: 8px; background: #fff; padding: 4px 8px; }
        header { background: #1d1d1f; color: #fff; padding: 8px 24px; }
        header nav { display: flex; gap: 20px; align-items: center; flex-wrap: wrap; }
        header a { color: #fff; text-decoration: none; }
        header .brand { font-weight: 700; }
        header form { margin-left: auto; }
        header button { background: transparent; color: #fff; border: 1px solid #888; }
        main { max-width: 1180px; margin: 0 auto; padding: 16px 24px 48px; }
        h1 { font-size: 22px; margin: 8px 0 12px; }
        h2 { font-size: 17px; margin: 24px 0 8px; }
        table { border-collapse: collapse; width: 100%; background: #fff; }
        th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
        th { font-size: 13px; color: var(--muted); font-weight: 600; }
        td.mono, .mono { font-family: ui-monospace, "SF Mono", Menlo, monospace; font-size: 13px; word-break: break-all; }
        .why { margin: 4px 0 0; color: var(--fg); }
        .access-yes { color: var(--good); font-weight: 600; }
        .access-no { color: var(--bad); font-weight: 600; }
        .banner { padding: 10px 14px; border-radius: 6px; margin: 12px 0; border: 1px solid var(--line); background: #fff; }
        .banner.done { border-color: var(--good); }
        .banner.refused, .banner.failed, .banner.error { border-color: var(--bad); }
        .banner.pending { border-color: var(--warn); }
        form.search { display: flex; gap: 8px; margin: 12px 0; }
        form.search input { flex: 1; }
        input, select, button { font: inherit; padding: 6px 10px; border: 1px solid var(--line); border-radius: 6px; }
        button { background: var(--accent); color: #fff; border-color: var(--accent); cursor: pointer; }
        button.danger { background: var(--bad); border-color: var(--bad); }
        a.button { display: inline-block; padding: 6px 10px; border: 1px solid var(--line); border-radius: 6px; text-decoration: none; }
        .actions { display: grid; grid-template-columns: repeat(auto-fit, minmax(260px, 1fr)); gap: 12px; margin: 8px 0; }
        .actions form { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 10px; }
        .actions label, .signin label { display: block; margin: 6px 0 2px; font-size: 13px; color: var(--muted); }
        .signin { max-width: 420px; margin: 48px auto; background: #fff; padding: 24px; border: 1px solid var(--line); border-radius: 8px; }
        .signin input { width: 100%; }
        .muted { color: var(--muted); font-size: 13px; }
        .kind { font-size: 12px; padding: 1px 6px; border-radius: 10px; background: #eef2fb; white-space: nowrap; }
        dl.confirm { display: grid; grid-template-columns: max-content 1fr; gap: 4px 16px; background: #fff; padding: 12px; border: 1px solid var(--line); border-radius: 6px; }
        dl.confirm dt { color: var(--muted); }
        svg.chart { background: #fff; border: 1px solid var(--line); border-radius: 6px; max-width: 100%; height: auto; }
        svg.chart .bar { fill: var(--accent); }
        svg.chart .bad { fill: var(--bad); }
        svg.chart text { font-size: 11px; fill: var(--muted); }
        """
}
