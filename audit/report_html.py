#!/usr/bin/python3
"""The HTML report of `attnspec audit`, drawn from its attnspec-audit/1 JSON.

Plots are made with matplotlib and embedded as base64 PNG, so the page is
one self-contained file that opens offline. `attnspec audit` runs this with
Debian's /usr/bin/python3 (python3-matplotlib).

Usage: report_html.py AUDIT_JSON OUT_HTML
       report_html.py --check      (exit 0 when matplotlib can be imported)
"""
import base64
import html
import io
import json
import sys

SERIES_STYLE = {  # candidate -> (label, colour)
    "kernel": ("kernel", "#c0392b"),
    "naive": ("naive, same formats", "#2471a3"),
    "floor": ("output-rounding floor", "#7f8c8d"),
}


def fmt(x):
    """Three significant digits; None (a non-finite value in the JSON) as inf."""
    if x is None:
        return "inf"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return str(x)
    return "%.3g" % x


def esc(text):
    return html.escape(str(text))


def figure_png(fig):
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return '<img alt="plot" src="data:image/png;base64,%s">' % base64.b64encode(buffer.getvalue()).decode("ascii")


def histogram_figure(point):
    import matplotlib.pyplot as plt

    h = point["histogram"]
    edges = h["edges"]
    fig, ax = plt.subplots(figsize=(8, 4.2))
    # Kernel before naive, and naive dashed, so that both show where they coincide.
    for name in ("floor", "kernel", "naive"):
        label, colour = SERIES_STYLE[name]
        counts = h[name]["counts"]
        if sum(counts) == 0:
            continue
        ax.stairs(counts, edges, label=label, color=colour, linewidth=2.2 if name == "kernel" else 1.2,
                  linestyle="--" if name == "naive" else "-", fill=name == "floor", alpha=0.35 if name == "floor" else 1.0)
    median_bound = point["bound"]["median_bound_u"]
    if median_bound is not None and edges[0] <= median_bound <= edges[-1]:
        ax.axvline(median_bound, color="black", linestyle="--", linewidth=1, label="a priori bound (median over elements)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("componentwise error, units of u_out |P||V|")
    ax.set_ylabel("checked elements per bin")
    ax.set_title("Distribution of the componentwise error (S=%d, d_k=%d)" % (point["shape"]["kv_len"], point["shape"]["d_k"]))
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    return fig


def sweep_figures(report):
    import matplotlib.pyplot as plt

    axis = "kv_len" if report["sweep"] == "S" else "d_k"
    axis_label = "S (keys)" if axis == "kv_len" else "d_k"
    points = report["points"]
    x = [p["shape"][axis] for p in points]
    fits = {f["series"]: f for f in report["fits"]}

    def series(get):
        return [get(p) for p in points]

    def fitted(name, colour, ax):
        f = fits.get(name)
        if not f or f["exponent"] is None or f["coefficient"] is None:
            return
        ax.plot(x, [f["coefficient"] * v ** f["exponent"] for v in x], color=colour, linestyle=":", linewidth=1,
                label="fit ~ %s^%.2f (%s)" % ("S" if axis == "kv_len" else "d_k", f["exponent"], name))

    fig1, ax = plt.subplots(figsize=(8, 4.5))
    kernel_colour, naive_colour, floor_colour = (SERIES_STYLE[n][1] for n in ("kernel", "naive", "floor"))
    ax.plot(x, series(lambda p: p["kernel"]["componentwise_u"]["max"]), "o-", color=kernel_colour, label="kernel, max")
    ax.plot(x, series(lambda p: p["kernel"]["componentwise_u"]["rms"]), "s--", color=kernel_colour, alpha=0.7,
            label="kernel, RMS")
    # Naive dashed with hollow markers on top, so the kernel shows where they coincide.
    ax.plot(x, series(lambda p: p["naive"]["componentwise_u"]["max"]), "D--", color=naive_colour, mfc="none",
            label="naive, max")
    ax.plot(x, series(lambda p: p["floor"]["componentwise_u"]["max"]), "o-", color=floor_colour, label="floor, max")
    # Each element has its own bound, so no single line is "the" bound: the
    # band spans the elements' bounds (every error lies below its own), the
    # line is their median.
    def bound_series(key):
        return [p["bound"][key] if p["bound"][key] is not None else float("nan") for p in points]

    if any(p["bound"]["median_bound_u"] is not None for p in points):
        ax.fill_between(x, bound_series("min_bound_u"), bound_series("max_bound_u"), color="black", alpha=0.08,
                        label="a priori bounds of the elements (min to max)")
        ax.plot(x, bound_series("median_bound_u"), "k^-", linewidth=1, label="a priori bound (median)")
    fitted("kernel componentwise max", kernel_colour, ax)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(axis_label)
    ax.set_ylabel("componentwise error, u_out |P||V|")
    ax.set_title("Error and bound vs %s" % axis_label)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)

    fig2, ax = plt.subplots(figsize=(8, 4.5))
    for name in ("kernel", "naive", "floor"):
        label, colour = SERIES_STYLE[name]
        style = dict(marker="D", linestyle="--", mfc="none") if name == "naive" else dict(marker="o", linestyle="-")
        ax.plot(x, series(lambda p, n=name: p[n]["rmse"]), color=colour, label=label, **style)
    fitted("kernel rmse", kernel_colour, ax)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel(axis_label)
    ax.set_ylabel("RMSE (absolute)")
    ax.set_title("RMSE against the exact result vs %s" % axis_label)
    ax.grid(True, which="major", alpha=0.3)
    ax.legend(fontsize=8)
    return [fig1, fig2]


def measures_table(point):
    rows = [
        ("componentwise max (u_out |P||V|)", lambda m: m["componentwise_u"]["max"]),
        ("componentwise median", lambda m: m["componentwise_u"]["median"]),
        ("componentwise RMS", lambda m: m["componentwise_u"]["rms"]),
        ("correctly rounded (share of elements)", lambda m: m["correctly_rounded_share"]),
        ("ulps max", lambda m: m["ulps"]["max"]),
        ("ulps median", lambda m: m["ulps"]["median"]),
        ("ulps RMS", lambda m: m["ulps"]["rms"]),
        ("normwise relative, max over rows", lambda m: m["normwise_relative"]["max"]),
        ("normwise relative, median", lambda m: m["normwise_relative"]["median"]),
        ("normwise relative, RMS", lambda m: m["normwise_relative"]["rms"]),
        ("RMSE", lambda m: m["rmse"]),
        ("max absolute error", lambda m: m["max_abs"]),
    ]
    out = ["<table><tr><th>measure</th><th>kernel</th><th>naive, same formats</th><th>output-rounding floor</th></tr>"]
    for name, get in rows:
        out.append("<tr><td>%s</td>%s</tr>" % (esc(name), "".join(
            "<td>%s</td>" % fmt(get(point[c])) for c in ("kernel", "naive", "floor"))))
    nonfinite = point["kernel"]["componentwise_u"]["nonfinite"]
    out.append("</table>")
    if nonfinite:
        out.append("<p class=warn>%d kernel outputs are NaN or infinite (counted as infinite error).</p>" % nonfinite)
    return "".join(out)


def yardsticks(report, point):
    b = point["bound"]
    items = []
    if b["unbounded"] == point["checked_elements"]:
        items.append("A priori bound (spec/SPEC.md 6.5): none finite for these formats and this S (section 6.4 needs "
                     "6 n u &lt; 1 for the accumulation format's u).")
    else:
        items.append("A priori bound (spec/SPEC.md 6.5): largest error / bound <b>%s</b> (error %s, bound %s u_out |P||V| "
                     "there); bound over elements: median %s, smallest %s; <b>%d</b> elements outside their bound%s."
                     % (fmt(b["max_ratio"]), fmt(b["error_u_at_max_ratio"]), fmt(b["bound_u_at_max_ratio"]),
                        fmt(b["median_bound_u"]), fmt(b["min_bound_u"]), b["outside"],
                        "; %d without a finite bound" % b["unbounded"] if b["unbounded"] else ""))
    items.append("Naive implementation in the same formats (%s), on the same rows: kernel / naive max absolute error "
                 "<b>%s</b>; FlashAttention criterion (max error &le; 2 &times; naive + floor %s): <b>%s</b>."
                 % (esc(report["naive"]), fmt(point["kernel_naive_max_abs_ratio"]), fmt(point["flash_attention_floor"]),
                    "met" if point["flash_attention_criterion_met"] else "NOT met"))
    items.append("Output-rounding floor: the error of the correctly rounded value itself, what a perfect kernel with this "
                 "output format has: RMSE %s, componentwise max %s." % (fmt(point["floor"]["rmse"]),
                                                                        fmt(point["floor"]["componentwise_u"]["max"])))
    return "<ul>%s</ul>" % "".join("<li>%s</li>" % i for i in items)


def worst_section(report, point):
    w = point["worst"]
    keys = "".join("<tr><td>%d</td><td>%s</td><td>%s</td><td><code>%s</code></td></tr>"
                   % (k["key"], fmt(k["weight"]), fmt(k["value"]), esc(k["value_hex"])) for k in w["top_keys"])
    case = report.get("worst_case_dir") or ""
    check = ("<p>Its row alone is the case directory <code>%s</code>; recheck it with <code>attnspec check %s --kernel %s</code>.</p>"
             % (esc(case), esc(case), esc(report["kernel"]))) if case else ""
    return """
<p>Row (batch, head, query) = (%d, %d, %d), column %d, at S=%d, d_k=%d: kernel <code>%s</code> = %s;
exact %.17g (within %s); correctly rounded <code>%s</code> = %s; |P||V| = %s; bound %s.
Error: <b>%s</b> u_out |P||V|, %s ulps%s.</p>
<p>Query row (%s bit patterns):</p><p class=hex>%s</p>
<table><tr><th>key</th><th>weight</th><th>V[key][column]</th><th>bits</th></tr>%s</table>
%s""" % (w["row"][0], w["row"][1], w["row"][2], w["column"], point["shape"]["kv_len"], point["shape"]["d_k"],
         esc(w["got_hex"]), fmt(w["got"]), w["exact"] if w["exact"] is not None else float("nan"), fmt(w["exact_error"]),
         esc(w["correctly_rounded_hex"]), fmt(w["correctly_rounded"]), fmt(w["abs_scale"]), fmt(w["bound"]),
         fmt(w["componentwise_u"]), fmt(w["ulps"]),
         " (the kernel's output is the correctly rounded value: this error is the output rounding itself)"
         if w["ulps"] == 0 else "", esc(report["formats"]["input"]), " ".join(esc(x) for x in w["query_hex"]),
         keys, check)


def sweep_section(report):
    axis = "kv_len" if report["sweep"] == "S" else "d_k"
    head = ("<table><tr><th>%s</th><th>kernel max</th><th>kernel RMS</th><th>naive max</th><th>floor max</th>"
            "<th>bound median</th><th>kernel RMSE</th><th>naive RMSE</th><th>floor RMSE</th><th>kernel / naive</th>"
            "<th>escalated rows</th><th>kernel s</th><th>reference s</th></tr>" % ("S" if axis == "kv_len" else "d_k"))
    rows = []
    for p in report["points"]:
        rows.append("<tr>%s</tr>" % "".join("<td>%s</td>" % fmt(v) for v in (
            p["shape"][axis], p["kernel"]["componentwise_u"]["max"], p["kernel"]["componentwise_u"]["rms"],
            p["naive"]["componentwise_u"]["max"], p["floor"]["componentwise_u"]["max"], p["bound"]["median_bound_u"],
            p["kernel"]["rmse"], p["naive"]["rmse"], p["floor"]["rmse"], p["kernel_naive_max_abs_ratio"],
            p["escalated_rows"], p["seconds"]["kernel"], p["seconds"]["reference"])))
    fits = "".join("<tr><td>%s</td><td>%s</td><td>%s</td><td>%d</td></tr>"
                   % (esc(f["series"]), "n/a" if f["exponent"] is None else fmt(f["exponent"]),
                      "n/a" if f["r_squared"] is None else fmt(f["r_squared"]), f["points"]) for f in report["fits"])
    return (head + "".join(rows) + "</table><p>Componentwise errors and bounds in u_out |P||V|.</p>"
            "<h3>Growth exponents</h3><p>Least squares of log y on log %s: y ~ c %s^e.</p>"
            "<table><tr><th>series</th><th>exponent e</th><th>R&sup2; (log-log)</th><th>points</th></tr>%s</table>"
            % ("S" if axis == "kv_len" else "d_k", "S" if axis == "kv_len" else "d_k", fits))


MEASURES_TEXT = """
<ul>
<li><b>componentwise</b>: |got &minus; exact| / (u_out &middot; &sum;<sub>j</sub> w<sub>j</sub> |V[j][t]|), the error in units of
the output format's unit roundoff times the element's |P||V| (spec/SPEC.md 6.7). A kernel whose only error is the final
rounding shows at most 1; the floor column is exactly that rounding error.</li>
<li><b>ulps</b>: values of the output format between the kernel's output and the correctly rounded exact value
(0 = correctly rounded).</li>
<li><b>normwise relative</b>: ||got &minus; exact||<sub>2</sub> / ||exact||<sub>2</sub> over one output row.</li>
<li><b>RMSE</b> and <b>max absolute error</b>: over every checked element; the figures papers publish (e.g.
FlashAttention-3, Table 3).</li>
<li>The exact values come from the fast certified reference: a double evaluation with a rigorous error bound (far
below any error shown), correctly rounded to the output format, escalated to multiprecision where the bound leaves the
rounding undecided.</li>
</ul>"""

STYLE = """
body { font-family: sans-serif; max-width: 1100px; margin: 1em auto; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0; }
td, th { border: 1px solid #bbb; padding: 3px 8px; text-align: right; font-size: 90%; }
td:first-child, th:first-child { text-align: left; }
.hex { font-family: monospace; font-size: 80%; word-break: break-all; }
.warn { color: #b03a2e; font-weight: bold; }
img { max-width: 100%; }
"""


def render(report):
    last = report["points"][-1]
    worst = max(report["points"], key=lambda p: p["worst"]["componentwise_u"] if p["worst"]["componentwise_u"] is not None
                else float("inf"))
    shape = last["shape"]
    shape_text = ",".join(str(shape[k]) for k in ("batch", "q_heads", "kv_heads", "q_len", "kv_len", "d_k", "d_v"))
    f = report["formats"]
    parts = ["<!DOCTYPE html><html><head><meta charset='utf-8'><title>attnspec audit: %s</title><style>%s</style></head><body>"
             % (esc(report["kernel"]), STYLE)]
    parts.append("<h1>attnspec audit: %s</h1>" % esc(report["kernel"]))
    parts.append("<ul><li>Formats: input %s, accumulate %s, output %s.</li>" % (esc(f["input"]), esc(f["accumulate"]),
                                                                                esc(f["output"])))
    parts.append("<li>Inputs: <code>%s</code>: %s, rounded to %s; seed %d; no mask, default scale 1/sqrt(d_k); "
                 "positions: %s.</li>"
                 % (esc(report["distribution"]), esc(report["distribution_description"]), esc(f["input"]), report["seed"],
                    esc(report.get("positions", "none"))))
    parts.append("<li>Shape B,Hq,Hkv,L,S,d_k,d_v = %s%s.</li>" % (
        shape_text, "" if report["sweep"] == "none" else "; swept over %s: %s" % (
            "S" if report["sweep"] == "S" else "d_k",
            ", ".join(str(p["shape"]["kv_len" if report["sweep"] == "S" else "d_k"]) for p in report["points"]))))
    parts.append("<li>Sampling: %s; %d rows, %d elements checked at this shape.</li>" % (
        esc(report["sampling"]), last["checked_rows"], last["checked_elements"]))
    parts.append("<li>Reference: %d of %d checked rows escalated to multiprecision; times: kernel %s s, reference %s s "
                 "(%d threads), naive yardstick %s s.</li></ul>" % (
                     last["escalated_rows"], last["checked_rows"], fmt(last["seconds"]["kernel"]),
                     fmt(last["seconds"]["reference"]), report["reference_threads"], fmt(last["seconds"]["naive"])))
    parts.append("<h2>Summary%s</h2>" % ("" if report["sweep"] == "none" else " at the full shape"))
    parts.append(measures_table(last))
    parts.append("<h2>Yardsticks</h2>" + yardsticks(report, last))
    parts.append("<h2>Error distribution</h2>")
    parts.append(figure_png(histogram_figure(last)))
    h = last["histogram"]["kernel"]
    parts.append("<p>Kernel: %d elements with zero error (not on the log axis), %d below and %d above the plotted range.</p>"
                 % (h["zeros"], h["below"], h["above"]))
    if report["sweep"] != "none":
        parts.append("<h2>Sweep over %s</h2>" % ("S" if report["sweep"] == "S" else "d_k"))
        for fig in sweep_figures(report):
            parts.append(figure_png(fig))
        parts.append(sweep_section(report))
    parts.append("<h2>Worst element</h2>" + worst_section(report, worst))
    parts.append("<h2>What the measures mean</h2>" + MEASURES_TEXT)
    parts.append("<p><small>attnspec-audit/1; generated by audit/report_html.py with matplotlib.</small></p></body></html>")
    return "\n".join(parts)


def main(argv):
    if len(argv) == 2 and argv[1] == "--check":
        import matplotlib  # noqa: F401  (the only dependency beyond the standard library)

        return 0
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    import matplotlib

    matplotlib.use("Agg")
    with open(argv[1], encoding="utf-8") as f:
        report = json.load(f)
    if report.get("format") != "attnspec-audit/1":
        print("report_html.py: %s: field 'format': expected attnspec-audit/1" % argv[1], file=sys.stderr)
        return 2
    page = render(report)
    with open(argv[2], "w", encoding="utf-8") as f:
        f.write(page)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
