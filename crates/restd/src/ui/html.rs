//! The pages' frame: escaping, the layout with its navigation and style,
//! and small pieces (tables, state badges, times) the pages share.

use model::Timestamp;
use std::fmt::Write as _;

/// Text for HTML character data and attribute values.
pub fn esc(t: &str) -> String {
    charts::escape(t)
}

/// The navigation: (path, label).
const NAV: &[(&str, &str)] = &[
    ("/", "Overview"),
    ("/jobs", "Jobs"),
    ("/history", "History"),
    ("/fairshare", "Fair share"),
    ("/reservations", "Reservations"),
    ("/sim", "Simulator"),
];

/// The style: light, readable at phone width, visible focus (a ring of at
/// least 3:1 against the page, the tables and the header: WCAG's
/// non-text contrast, checked by `tests::the_focus_ring_stands_out`),
/// state colours from the Okabe-Ito palette and always with the state's
/// word beside them.
pub(crate) const STYLE: &str = "\
*{box-sizing:border-box}\
body{font-family:system-ui,sans-serif;margin:0;color:#111;background:#fafafa;line-height:1.4}\
header{background:#123;color:#fff;padding:.5rem 1rem;display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:center}\
header a{color:#fff}\
header .who{margin-left:auto}\
nav a{margin-right:.8rem}\
main{padding:1rem;max-width:1200px;margin:auto}\
a:focus,button:focus,input:focus,select:focus{outline:3px solid #0072B2;outline-offset:2px}\
table{border-collapse:collapse;width:100%;margin:.5rem 0 1rem;background:#fff}\
th,td{border:1px solid #ccc;padding:.25rem .5rem;text-align:left;vertical-align:top}\
th{background:#eef}\
.scroll{overflow-x:auto}\
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(9.5rem,1fr));gap:.5rem}\
.grid2{display:grid;grid-template-columns:1fr 1fr;gap:1rem}\
.grid2>*{min-width:0}\
@media (max-width:800px){.grid2{grid-template-columns:1fr}}\
.node{display:block;border:2px solid #999;border-radius:4px;padding:.4rem;text-decoration:none;color:#111;background:#fff}\
.node b{display:block}\
.st{display:inline-block;padding:0 .3rem;border-radius:3px;font-size:.85em}\
.st-idle{background:#cfe8f7;border-color:#56B4E9}\
.st-mixed{background:#fbe3b0;border-color:#E69F00}\
.st-allocated{background:#f6c9a8;border-color:#D55E00}\
.st-drained,.st-draining{background:#e8d0e0;border-color:#CC79A7}\
.st-down,.st-fail,.st-unknown{background:#ddd;border-color:#000}\
.st-reserved,.st-maint{background:#cdeee3;border-color:#009E73}\
.bar{height:.5rem;background:#eee;border-radius:2px;margin-top:.2rem}\
.bar span{display:block;height:100%;background:#0072B2;border-radius:2px}\
form.inline{display:inline}\
button{padding:.3rem .8rem;margin:.2rem .3rem .2rem 0}\
pre{background:#fff;border:1px solid #ccc;padding:.5rem;overflow-x:auto;white-space:pre-wrap}\
.err{background:#fde;border:1px solid #c33;padding:.5rem}\
.ok{background:#dfd;border:1px solid #393;padding:.5rem}\
svg{max-width:100%;height:auto}\
label{margin-right:.8rem}\
.skip{position:absolute;left:-9999px;top:0;background:#fff;padding:.3rem}\
.skip:focus{left:.5rem}\
";

/// The live updates: pages that mark `data-live` reload their content when
/// the watch stream reports a change (throttled), and keep working without
/// JavaScript (reading needs none). They also reload once the stream is
/// open: a change between the page's rendering and the stream's start
/// sends no event to this page.
const LIVE_SCRIPT: &str = "\
(function(){var m=document.querySelector('main[data-live]');if(!m||!window.EventSource)return;\
var s=new EventSource(m.getAttribute('data-live'));var t=null;\
function refresh(){t=null;fetch(location.href,{credentials:'same-origin'}).then(function(r){return r.text()}).then(function(h){\
var d=new DOMParser().parseFromString(h,'text/html');var n=d.querySelector('main');\
if(n){m.innerHTML=n.innerHTML;document.body.setAttribute('data-updated',String(Date.now()));}})}\
function soon(){if(!t)t=setTimeout(refresh,300)}\
s.onopen=soon;s.onmessage=soon;\
['job','node'].forEach(function(k){s.addEventListener(k,soon)});\
})();";

/// A whole page. `live`: the watch stream's URL when the page updates
/// itself.
pub fn page(title: &str, user: &str, live: Option<&str>, body: &str) -> String {
    let mut s = String::with_capacity(body.len() + 4096);
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <link rel=\"icon\" href=\"data:,\"><title>{} - muster</title><style>{STYLE}</style></head><body>\
         <a href=\"#main\" class=\"skip\">Skip to content</a>\
         <header><strong>muster</strong><nav aria-label=\"main\">",
        esc(title)
    );
    for (href, label) in NAV {
        let _ = write!(s, "<a href=\"{href}\">{label}</a>");
    }
    if !user.is_empty() {
        let _ = write!(
            s,
            "</nav><span class=\"who\">{} · <a href=\"/logout\">log out</a></span></header>",
            esc(user)
        );
    } else {
        s.push_str("</nav></header>");
    }
    match live {
        Some(url) => {
            let _ = write!(s, "<main id=\"main\" data-live=\"{}\">", esc(url));
        }
        None => s.push_str("<main id=\"main\">"),
    }
    let _ = write!(s, "<h1>{}</h1>{body}</main>", esc(title));
    if live.is_some() {
        let _ = write!(s, "<script>{LIVE_SCRIPT}</script>");
    }
    s.push_str("</body></html>\n");
    s
}

/// A table: a caption, a header row and rows of already-escaped cells.
pub fn table(caption: &str, head: &[&str], rows: &[Vec<String>]) -> String {
    let mut s = format!(
        "<div class=\"scroll\"><table><caption>{}</caption><thead><tr>",
        esc(caption)
    );
    for h in head {
        let _ = write!(s, "<th scope=\"col\">{}</th>", esc(h));
    }
    s.push_str("</tr></thead><tbody>");
    for r in rows {
        s.push_str("<tr>");
        for c in r {
            let _ = write!(s, "<td>{c}</td>");
        }
        s.push_str("</tr>");
    }
    if rows.is_empty() {
        let _ = write!(s, "<tr><td colspan=\"{}\">none</td></tr>", head.len());
    }
    s.push_str("</tbody></table></div>");
    s
}

/// The CSS class of a node state word (`idle`, `drained`, `down*`).
pub fn state_class(state: &str) -> &'static str {
    let w = state.trim_end_matches(['*', '~', '#', '%', '$', '@', '!', '^', '-']);
    match w {
        "idle" => "st-idle",
        "mixed" => "st-mixed",
        "allocated" | "completing" => "st-allocated",
        "drained" => "st-drained",
        "draining" => "st-draining",
        "reserved" | "resv" => "st-reserved",
        "maint" => "st-maint",
        "down" => "st-down",
        "fail" | "failing" => "st-fail",
        _ => "st-unknown",
    }
}

/// A state badge: its word, coloured.
pub fn badge(state: &str) -> String {
    format!(
        "<span class=\"st {}\">{}</span>",
        state_class(state),
        esc(state)
    )
}

/// A time as `YYYY-MM-DD HH:MM:SS` UTC.
pub fn time(ts: Timestamp) -> String {
    let (y, m, d) = charts::civil_from_days(ts.div_euclid(86_400));
    let s = ts.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        s / 3_600,
        s % 3_600 / 60,
        s % 60
    )
}

/// A duration as Slurm prints elapsed times: `[D-]HH:MM:SS`.
pub fn duration(secs: i64) -> String {
    let secs = secs.max(0);
    let (d, h, m, s) = (
        secs / 86_400,
        secs % 86_400 / 3_600,
        secs % 3_600 / 60,
        secs % 60,
    );
    if d > 0 {
        format!("{d}-{h:02}:{m:02}:{s:02}")
    } else {
        format!("{h:02}:{m:02}:{s:02}")
    }
}

/// A query string's value, percent-encoded (all but RFC 3986's
/// unreserved characters).
pub fn url_enc(v: &str) -> String {
    let mut s = String::with_capacity(v.len());
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            s.push(char::from(b));
        } else {
            let _ = write!(s, "%{b:02X}");
        }
    }
    s
}

/// A hidden form field with the anti-forgery token.
pub fn csrf_field(token: &str) -> String {
    format!(
        "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
        esc(token)
    )
}
