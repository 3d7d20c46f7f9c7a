//! The attribution as one self-contained HTML page (`--size-report FILE.html`): inline CSS and a
//! few lines of inline script, nothing fetched. A bar of the unmerged text split into what
//! remains and what each kind saved, then one bar per entry, largest saving first, whose
//! functions open on click (and show on hover).

use super::figures::{EntrySizes, SavingKind, SizeAttribution};
use super::text::savings;
use crate::pass::MergeReport;
use std::fmt::Write;

/// Untouched functions listed under "what remains", largest first.
const REMAINING_LISTED: usize = 50;

const STYLE: &str = "\
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:1.5em}
.bar{display:flex;height:2em;border:1px solid #888;margin:.5em 0}
.bar div{height:100%;min-width:1px}
.k-alias{background:#4e79a7}.k-thunk{background:#f28e2b}.k-removed{background:#e15759}
.k-folded{background:#76b7b2}.k-similar{background:#59a14f}.k-global{background:#af7aa1}
.k-remains{background:#ddd}
.legend span{display:inline-block;margin-right:1em;cursor:pointer}
.legend i{display:inline-block;width:1em;height:1em;vertical-align:middle;margin-right:.3em}
.entry summary{display:flex;align-items:center;cursor:pointer;gap:.5em}
.entry .len{height:1em;min-width:1px}
.entry .saved{width:6em;text-align:right;font-variant-numeric:tabular-nums}
.entry table,.remains table{border-collapse:collapse;margin:.3em 0 .8em 7em}
td,th{padding:0 .6em;text-align:right}td:last-child,th:last-child{text-align:left}
.hidden{display:none}
";

const SCRIPT: &str = "\
document.querySelectorAll('.legend span[data-kind]').forEach(function (s) {
  s.addEventListener('click', function () {
    var kind = s.getAttribute('data-kind');
    document.querySelectorAll('.entry').forEach(function (e) {
      var on = e.getAttribute('data-kinds').split(' ').indexOf(kind) >= 0;
      e.classList.toggle('hidden', !on && !s.classList.contains('on'));
    });
    s.classList.toggle('on');
  });
});
";

/// The page of `sizes`, the attribution of `report`'s merge; `title` names the input.
pub fn to_html(report: &MergeReport, sizes: &SizeAttribution, title: &str) -> String {
    let mut out = String::new();
    let saved = sizes.text_bytes_unmerged as i64 - sizes.text_bytes as i64;
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <title>clif-merge: where the bytes went: {t}</title><style>{STYLE}</style></head><body>\n\
         <h1>Where the bytes went: {t}</h1>\n<p id=\"totals\">{saved} text bytes saved: \
         {} unmerged, {} merged.</p>\n",
        sizes.text_bytes_unmerged,
        sizes.text_bytes,
        t = escape(title),
    );
    kinds_bar(&mut out, sizes);
    out.push_str(
        "<h2>Savings, largest first (click for the functions)</h2>\n<div id=\"entries\">\n",
    );
    let all = savings(report, sizes);
    let largest = all
        .iter()
        .map(|s| s.sizes.saved.abs())
        .max()
        .unwrap_or(0)
        .max(1);
    for (at, s) in all.iter().enumerate() {
        entry(&mut out, at, s.what, &s.name.to_string(), s.sizes, largest);
    }
    out.push_str("</div>\n");
    remains(&mut out, sizes);
    let _ = write!(out, "<script>{SCRIPT}</script>\n</body></html>\n");
    out
}

/// The unmerged text as one bar: what remains, then each kind's saving; and the legend.
fn kinds_bar(out: &mut String, sizes: &SizeAttribution) {
    let whole = sizes.text_bytes_unmerged.max(1) as f64;
    let percent = |bytes: i64| 100.0 * bytes.max(0) as f64 / whole;
    let _ = write!(
        out,
        "<div class=\"bar\" id=\"kinds\"><div class=\"k-remains\" style=\"width:{:.3}%\" \
         title=\"remains: {} bytes\"></div>",
        percent(sizes.text_bytes as i64),
        sizes.text_bytes
    );
    for (kind, bytes) in sizes.by_kind.kinds() {
        let _ = write!(
            out,
            "<div class=\"k-{k}\" style=\"width:{:.3}%\" title=\"{k}: {bytes} bytes\"></div>",
            percent(bytes),
            k = kind.keyword()
        );
    }
    out.push_str("</div>\n<p class=\"legend\"><span><i class=\"k-remains\"></i>remains</span>");
    for (kind, bytes) in sizes.by_kind.kinds() {
        let k = kind.keyword();
        let _ = write!(
            out,
            "<span data-kind=\"{k}\" id=\"kind-{k}\"><i class=\"k-{k}\"></i>{k}: {bytes}</span>"
        );
    }
    out.push_str("</p>\n");
}

/// One entry: its bar (coloured by the kind that saved most in it) and its functions' table.
fn entry(out: &mut String, at: usize, what: &str, name: &str, sizes: &EntrySizes, largest: i64) {
    let mut kinds: Vec<SavingKind> = sizes.members.iter().map(|m| m.kind).collect();
    kinds.sort_by_key(|k| k.keyword());
    kinds.dedup();
    let main = main_kind(sizes);
    let kinds: Vec<&str> = kinds.iter().map(|k| k.keyword()).collect();
    let members: Vec<String> = sizes.members.iter().map(|m| m.name.to_string()).collect();
    let _ = write!(
        out,
        "<details class=\"entry\" id=\"entry-{at}\" data-kinds=\"{}\" data-name=\"{n}\">\
         <summary title=\"{}\"><span class=\"saved\">{}</span><span class=\"len k-{}\" \
         style=\"width:{:.3}em\"></span><span>{what} {n} ({} functions)</span></summary>\
         <table><tr><th>before</th><th>after</th><th>role</th><th>function</th></tr>",
        kinds.join(" "),
        escape(&members.join(", ")),
        sizes.saved,
        main.keyword(),
        30.0 * sizes.saved.max(0) as f64 / largest as f64,
        sizes.members.len(),
        n = escape(name),
    );
    for m in &sizes.members {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            m.before,
            m.after,
            m.role,
            escape(&m.name.to_string())
        );
    }
    if sizes.moved != 0 {
        let _ = write!(
            out,
            "<tr><td colspan=\"2\">{}</td><td colspan=\"2\">padding of functions after it</td></tr>",
            sizes.moved
        );
    }
    out.push_str("</table></details>\n");
}

/// The kind that saved the most bytes in an entry.
fn main_kind(sizes: &EntrySizes) -> SavingKind {
    let mut by: Vec<(SavingKind, i64)> = Vec::new();
    for m in &sizes.members {
        let delta = m.before as i64 - m.after as i64;
        match by.iter_mut().find(|(k, _)| *k == m.kind) {
            Some((_, bytes)) => *bytes += delta,
            None => by.push((m.kind, delta)),
        }
    }
    by.iter()
        .max_by_key(|(_, bytes)| *bytes)
        .map_or(SavingKind::Thunk, |(k, _)| *k)
}

/// What remains: the functions no merge touched, largest first.
fn remains(out: &mut String, sizes: &SizeAttribution) {
    let mut untouched: Vec<_> = sizes.untouched.iter().collect();
    untouched.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let total: u64 = untouched.iter().map(|u| u.1).sum();
    let _ = write!(
        out,
        "<h2>What remains</h2>\n<details class=\"remains\" id=\"remains\"><summary>{} functions \
         no merge touched, {total} bytes (the {} largest)</summary><table>\
         <tr><th>bytes</th><th>function</th></tr>",
        untouched.len(),
        untouched.len().min(REMAINING_LISTED)
    );
    for (name, bytes) in untouched.iter().take(REMAINING_LISTED) {
        let _ = write!(
            out,
            "<tr><td>{bytes}</td><td>{}</td></tr>",
            escape(&name.to_string())
        );
    }
    out.push_str("</table></details>\n");
}

/// `text` with HTML's special characters escaped.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}
