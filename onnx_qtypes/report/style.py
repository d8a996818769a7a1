"""The page's stylesheet, inlined into every report (system fonts only: nothing is fetched)."""

CSS = """
:root{--ink:#1f2733;--muted:#6b7686;--line:#e3e7ee;--bg:#f5f7fa;--card:#fff;--accent:#2f6fdf;
--bar:#5b8def;--range:#d9f2e3;--range-some:#eef8f1;--marker:#1e8a4c;--clip:#e05252;--partly:#f0a23b;
--bad:#c93636;--warn:#b7791f;--good:#2f855a}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);
font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
code{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;color:#3b4656}
header{background:#1f2a3c;color:#fff;padding:22px 32px 18px}
header .brand{font-size:12px;letter-spacing:.08em;text-transform:uppercase;color:#9fb3d1}
header h1{margin:4px 0 14px;font-size:20px;font-weight:600;word-break:break-all}
header .note{margin:6px 0 0;color:#c7d3e6;font-size:13px}
.stats{display:flex;gap:12px;flex-wrap:wrap}
.stat{background:rgba(255,255,255,.08);border-radius:8px;padding:8px 14px;min-width:120px}
.stat .value{display:block;font-size:22px;font-weight:600}
.stat .label{font-size:12px;color:#b9c6da}
.stat.bad .value{color:#ff8c8c}.stat.warn .value{color:#f6c36a}.stat.good .value{color:#8fe0b0}
main{max-width:1320px;margin:0 auto;padding:20px 24px 8px}
h2{font-size:16px;margin:0 0 10px}
.panel,.card{background:var(--card);border:1px solid var(--line);border-radius:10px;
box-shadow:0 1px 2px rgba(20,30,50,.05);margin:0 0 18px;padding:16px 18px}
.muted{color:var(--muted)}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
th{font-size:12px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted);font-weight:600;
text-align:left;border-bottom:2px solid var(--line);padding:6px 10px}
td{border-bottom:1px solid var(--line);padding:6px 10px;vertical-align:top}
tbody tr:hover{background:#f8fafd}
.num{text-align:right;white-space:nowrap}
table.summary td:first-child{word-break:break-all}
a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}
.count{display:inline-block;min-width:24px;text-align:center;border-radius:10px;padding:0 7px;font-weight:600;
font-size:12px;background:#eef1f5;color:var(--muted)}
.count.bad{background:#fde8e8;color:var(--bad)}.count.warn{background:#fdf3e1;color:var(--warn)}
span.bad{color:var(--bad);font-weight:600}span.warn{color:var(--warn);font-weight:600}
.definitions{font-size:12.5px;color:var(--muted);margin:-6px 4px 18px}
.card{padding:0;overflow:hidden}
.card.has-errors{border-left:4px solid var(--bad)}
.card-head{display:flex;align-items:center;gap:12px;flex-wrap:wrap;padding:12px 18px;
border-bottom:1px solid var(--line);background:#fafbfd}
.card-head h3{margin:0;font-size:15px;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;
word-break:break-all}
.chips{display:flex;gap:6px;flex-wrap:wrap}
.chip{font-size:12px;background:#eaf0fb;color:#2c4f8f;border-radius:12px;padding:1px 9px}
.card-body{display:grid;grid-template-columns:minmax(280px,1fr) 640px;gap:18px;padding:14px 18px}
@media (max-width:1000px){.card-body{grid-template-columns:1fr}}
dl{display:grid;grid-template-columns:max-content 1fr;gap:4px 14px;margin:0;font-size:13px}
dt{color:var(--muted)}dd{margin:0;font-variant-numeric:tabular-nums;word-break:break-word}
.chart{margin:0 0 8px}
.chart.empty{border:1px dashed var(--line);border-radius:8px;color:var(--muted);padding:14px;text-align:center}
svg{display:block;max-width:100%;height:auto;font-family:inherit}
svg .bin{fill:var(--bar)}svg .bin.clipped{fill:var(--clip)}svg .bin.partly{fill:var(--partly)}svg .bin.cut{stroke:#1f2937;stroke-width:.8;stroke-dasharray:3 2}
svg .range{fill:var(--range)}svg .range-some{fill:var(--range-some)}
svg .range-marker{stroke:var(--marker);stroke-width:1.5;stroke-dasharray:4 3}
svg .marker-label{font-size:11px;fill:var(--marker);font-weight:600;paint-order:stroke;stroke:#fff;stroke-width:3px}
svg .observed{fill:#44505f}
svg .axis{stroke:#aab3c0;stroke-width:1}
svg .tick{font-size:11px;fill:var(--muted)}
svg .channel-bar{fill:#8aa9e6}svg .channel-bar.flagged{fill:var(--bad)}
.legend{display:flex;gap:6px 14px;flex-wrap:wrap;align-items:center;font-size:12px;color:var(--muted);margin-top:4px}
.legend .item{white-space:nowrap}
.legend .key{display:inline-block;width:11px;height:11px;border-radius:2px;margin-right:5px;vertical-align:-1px}
.key.bin{background:var(--bar)}.key.range{background:var(--range);border:1px solid var(--marker)}
.key.range-some{background:var(--range-some);border:1px dashed var(--marker)}
.key.clipped{background:var(--clip)}.key.partly{background:var(--partly)}
details.per-channel{margin-top:6px;font-size:13px}
details summary{cursor:pointer;color:var(--accent);margin:4px 0}
details.all-tensors summary h2{display:inline}
table.channels-table td,table.channels-table th{padding:3px 8px;font-size:12px}
tr.flagged td{background:#fdf0f0}
.card-findings{border-top:1px solid var(--line);padding:10px 18px 12px;background:#fffafa}
.card-findings h4{margin:0 0 6px;font-size:13px}
ul.findings{list-style:none;margin:0;padding:0}
li.finding{padding:8px 0;border-bottom:1px solid var(--line)}li.finding:last-child{border-bottom:0}
.badge{display:inline-block;font-size:11px;font-weight:700;text-transform:uppercase;border-radius:4px;padding:1px 6px}
.badge.error{background:#fde8e8;color:var(--bad)}.badge.warning{background:#fdf3e1;color:var(--warn)}
.rule{font-weight:600;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
.finding .message{margin:3px 0 0}.finding .where{color:var(--muted);font-size:12px}
footer{max-width:1320px;margin:0 auto;padding:4px 24px 28px;color:var(--muted);font-size:12px}
"""
