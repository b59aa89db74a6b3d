"""The dashboard's page: the survey's counts and registration rate, the private ranking of
:class:`~privrank.serve.dashboard.LiveRanking` as a table and an interval plot, its guarantee, the
corrections of the survey's texts, and the export link.

The page has no script and no inline style: it lives under ``default-src 'self'``. Every link and
asset is relative to the dashboard's own URL, so the page works unchanged under a path prefix (a
proxy that serves the survey at ``https://host/survey/`` and strips ``/survey``).
"""
from __future__ import annotations

import html
import math
from datetime import datetime
from urllib.parse import quote

import numpy as np

from .dashboard import LiveRanking, respondents_needed
from .survey import RESPONDENT_UNITS

#: characters of an item label drawn in the plot (the table shows it whole), and the width of the
#: plot's label column (of its 360 units), which holds that many and the rank
PLOT_LABEL_CHARS = 22
#: characters of a longer label's end kept after the ellipsis: labels alike up to a suffix, such as
#: "Code Llama Instruct (13B)" and "(34B)", stay told apart
PLOT_LABEL_END = 5
PLOT_LABEL_WIDTH = 176
#: what a ranking survey's score is, and why it can leave [0, 1]
BORDA_NOTE = ("Borda share: the fraction of the other items an item is ranked above, on average over the "
              "respondents (1: first on every ballot, 0: last). It is estimated from randomized ballots with the "
              "noise's bias removed, so it is right on average, not exactly: an item near 0 can come out below 0 "
              "(or one near 1 above 1) by noise alone; its 95% interval shows how far the noise may carry it.")

def registrations_html(store, issued: int, used: int, recent=None) -> str:
    """The registration rate: respondents per UTC day (stored), in the last hour since start-up (this
    process's memory, never stored), and the invitations issued and used."""
    days = store.registrations_by_day()
    text = "Registrations per day (UTC): " + ("; ".join(f"{day}: {n:,}" for day, n in days) if days else "none yet") + "."
    if recent is not None:
        n, minutes = recent.last_hour()
        text += (f" In the last hour: {n:,}." if minutes >= 59.5 else
                 f" Since start-up {minutes:.0f} minute{'s' * (round(minutes) != 1)} ago: {n:,}.")
    if issued:
        text += f" Invitations: {issued:,} issued, {used:,} used."
    return f"<p id=\"registrations\">{html.escape(text)}</p>"


def invitations_html(survey, issued: int, used: int, needed: int | None, have: int) -> list[str]:
    """On an invitation-only survey still short of the threshold ``needed`` (None: not known yet) with
    ``have`` reports: the invitations left beside the respondents the ranking still needs, with a
    warning when fewer are left than needed."""
    if not issued or needed is None or have >= needed:
        return []
    left, more = issued - used, respondents_needed(survey, needed, have)
    text = (f"Invitations left: {left:,} of {issued:,}; the ranking needs about {more:,} more invited "
            f"respondent{'s' * (more != 1)} (at {survey.max_answers} report{'s' * (survey.max_answers != 1)} each).")
    if left >= more:
        return [f"<p id=\"invitations\">{html.escape(text)}</p>"]
    return [f"<p id=\"invitations\" class=\"warning\"><strong>Too few invitations left:</strong> "
            f"{html.escape(text)} Issue more (privrank serve --invitations N), or the ranking may never be shown.</p>"]


def decimals(rows) -> int:
    """Decimals that show the scores as precisely as their intervals allow: two significant digits
    of the median interval half-width (two decimals without intervals)."""
    widths = [(r[3] - r[2]) / 2 for r in rows if r[2] is not None and r[3] > r[2]]
    if not widths:
        return 2
    return int(min(6, max(0, 1 - math.floor(math.log10(float(np.median(widths)))))))


def ranking_table(rows, score: str) -> str:
    """The ranked table: rank, item, score, its 95% interval and the 95% rank interval."""
    e = html.escape
    d = decimals(rows)

    def ranks(lo, hi):
        return "" if lo is None else f"{lo}" if lo == hi else f"{lo}–{hi}"
    cells = "".join(f"<tr><td>{r + 1}</td><td class=\"item\">{e(str(item))}</td><td>{s:.{d}f}</td>"
                    f"<td>{'' if lo is None else f'[{lo:.{d}f}, {hi:.{d}f}]'}</td><td>{ranks(rlo, rhi)}</td></tr>"
                    for r, (item, s, lo, hi, rlo, rhi) in enumerate(rows))
    return (f"<div class=\"scroll\"><table id=\"ranking\"><thead><tr><th>rank</th><th>item</th><th>{e(score)}</th>"
            f"<th>95% interval</th><th>95% rank interval</th></tr></thead><tbody>{cells}</tbody></table></div>")


def dashboard_page(survey, store, token: str | None = None, recent=None, live: LiveRanking | None = None,
                   closed: datetime | None = None) -> str:
    """The dashboard's HTML (no script, no inline style: the page lives under ``default-src 'self'``). ``recent``
    is the server's :class:`RecentRegistrations`; ``live``, the :class:`LiveRanking` the server keeps (a fresh
    one, which reads every report, without it); ``closed``, when the survey closed (None while it is open)."""
    issued, used = store.invitations()
    unit = RESPONDENT_UNITS[bool(issued)]
    live = LiveRanking(survey, store, refresh=0.0) if live is None else live
    view = live.view(bool(issued))
    respondents, reports = store.counts()  # after the view: at least the reports it is of
    e, g = html.escape, view["guarantee"]
    fitted = view["reports"]
    updated = (f"{'Ranking of' if 'rows' in view else 'Counted'} {fitted:,} report{'s' * (fitted != 1)}, "
               f"computed {view['updated']:%H:%M:%S} UTC on {view['updated']:%Y-%m-%d}"
               + (f" (refitted every {live.refresh:g} seconds when reports arrive)." if live.refresh > 0 and closed is None
                  else "."))
    if reports > fitted:
        later = reports - fitted
        updated += f" The {later:,} report{'s' * (later != 1)} stored since {'are' if later != 1 else 'is'} in the next refit."
    parts = [] if closed is None else [f"<p id=\"closed\"><strong>Closed on {closed:%Y-%m-%d %H:%M:%S} UTC:"
                                       "</strong> no more answers are taken; the ranking and the export are final.</p>"]
    parts += [f"<h1>{e(survey.title)}</h1>", f"<p>{e(survey.question)}</p>",
              "<p id=\"preview\"><a href=\"./#preview\">Preview the survey</a> as a respondent sees it (what you "
              "answer there is neither sent nor kept).</p>",
              f"<p id=\"counts\">Respondents: {respondents:,} ({unit}s). Reports: {reports:,}. Design: "
              f"{e(survey.design)}, epsilon {survey.epsilon:g} per answer, at most {survey.max_answers} per {unit}.</p>",
              registrations_html(store, issued, used, recent)]
    parts += invitations_html(survey, issued, used, view["needed"], fitted)
    parts += ["<h2>Private ranking</h2>",
              f"<p id=\"updated\">{e(updated)}</p>"]
    if "rows" in view:
        parts.append(ranking_table(view["rows"], view["score"]))
        if view["rows"][0][2] is not None:
            parts.append(interval_svg(view["rows"], view["score"]))
        if view["score"] == "Borda share":
            parts.append(f"<p id=\"score-note\">{e(BORDA_NOTE)}</p>")
        parts.append(f"<p id=\"margin\"><strong>Manipulation margin:</strong> {e(view['margin_text'])}. A "
                     f"small margin means a few fake {unit}s could decide the top item: register respondents by "
                     "invitation, and compare with the registration rate above.</p>")
    else:
        parts.append(f"<p id=\"waiting\">{e(view['waiting'])}</p>")
    parts += ["<h2>Guarantee</h2>", f"<p>{e(g.describe())}</p>", f"<p>In plain words: {e(g.plain())}</p>"]
    parts += [f"<ul>{''.join(f'<li>{e(n)}</li>' for n in view['notes'])}</ul>"] if view["notes"] else []
    parts += corrections_html(store.text_history())
    query = f"?token={e(quote(token, safe=''))}" if token else ""
    what = ("the reports (CSV for privrank rank)" if survey.design == "pairs" else
            "the randomized ballots (CSV for privrank.serve.ballots.rank_ballots)")
    parts.append(f"<p><a href=\"export.csv{query}\">Export {what}</a></p>")
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><meta http-equiv=\"refresh\" "
            f"content=\"30\"><title>{e(survey.title)}: dashboard</title>"
            "<link rel=\"stylesheet\" href=\"static/dashboard.css\">"
            f"</head><body><main>{''.join(parts)}</main></body></html>")


def corrections_html(history) -> list[str]:
    """The survey's texts as corrected since it started (:meth:`~privrank.serve.store.Store.text_history`):
    each field's first recorded text is its original, each later one a correction, listed with its day
    and its new wording, so a reader of the ranking knows the reports may answer different wordings."""
    seen, rows = set(), []
    for field, text, day in history:
        if field in seen:
            rows.append(f"<li>{html.escape(day)}: the {html.escape(field)} now reads "
                        f"\u201c{html.escape(text) if text else '(removed)'}\u201d</li>")
        seen.add(field)
    if not rows:
        return []
    return ["<h2>Corrections</h2>", "<p id=\"corrections\">Texts corrected since the survey started (reports before "
            "a correction answered the earlier wording; the terms, which fix what a report means, cannot change):</p>",
            f"<ul>{''.join(rows)}</ul>"]


def nice_ticks(lo: float, hi: float, most: int = 7) -> list[float]:
    """Round tick values from at or below ``lo`` to at or above ``hi`` (at least two): the multiples
    of the finest step of 1, 2 or 5 times a power of ten that needs at most ``most`` of them."""
    span = hi - lo if hi > lo else (abs(hi) or 1.0)
    power = math.floor(math.log10(span))
    steps = [f * 10.0 ** p for p in (power - 1, power) for f in (1, 2, 5)] + [10.0 ** (power + 1)]
    step = next(s for s in steps if math.ceil(hi / s - 1e-9) - math.floor(lo / s + 1e-9) + 1 <= most)
    first = math.floor(lo / step + 1e-9)
    return [round(k * step, 12) for k in range(first, max(math.ceil(hi / step - 1e-9), first + 1) + 1)]


def tick_label(value: float, step: float) -> str:
    """A tick value with the decimals its step needs (no ``-0``)."""
    places = max(0, -math.floor(math.log10(step) + 1e-9))
    text = f"{value:.{places}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def plot_label(name: str) -> str:
    """An item's label as the plot draws it: whole up to :data:`PLOT_LABEL_CHARS` characters, else
    shortened to that many: its start, an ellipsis and its last :data:`PLOT_LABEL_END` characters."""
    if len(name) <= PLOT_LABEL_CHARS:
        return name
    return name[:PLOT_LABEL_CHARS - 1 - PLOT_LABEL_END] + "…" + name[-PLOT_LABEL_END:]


def interval_svg(rows, label: str) -> str:
    """An SVG of each item's estimate and interval, one row per item in rank order, the item's label
    on the left on its row's line (centred on the line of its interval and dot, so no label sits
    between two rows); it scales to the page's width (``viewBox``)."""
    e = html.escape
    width, gutter, right, step, top = 360, PLOT_LABEL_WIDTH, 16, 24, 10
    lo = min(r[2] for r in rows)
    hi = max(r[3] for r in rows)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return ""
    ticks = nice_ticks(lo, hi)
    lo, hi = ticks[0], ticks[-1]
    span = hi - lo

    def x(v):
        return gutter + (v - lo) / span * (width - gutter - right)
    bottom = top + step * len(rows)
    out = [f"<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 {width} {bottom + 40}\" class=\"intervals\" "
           f"role=\"img\" aria-label=\"{e(label)} with 95% intervals\" font-family=\"sans-serif\" font-size=\"12\">"]
    if lo < 0 < hi:
        out.append(f"<line x1=\"{x(0):.1f}\" y1=\"{top}\" x2=\"{x(0):.1f}\" y2=\"{bottom}\" stroke=\"#bbb\" "
                   "stroke-dasharray=\"4 3\"/>")
    labels = [f"<clipPath id=\"plot-labels\"><rect width=\"{gutter - 6}\" height=\"{bottom}\"/></clipPath>"
              "<g clip-path=\"url(#plot-labels)\">"]  # a label too wide for its column never covers the plot
    for k, (item, score, a, b, *_) in enumerate(rows):
        y = top + step * k + step // 2
        name = str(item)
        labels.append(f"<text x=\"4\" y=\"{y}\" dominant-baseline=\"central\" class=\"label\"><title>{e(name)}</title>"
                      f"{k + 1}. {e(plot_label(name))}</text>")
        out.append(f"<line x1=\"{x(a):.1f}\" y1=\"{y}\" x2=\"{x(b):.1f}\" y2=\"{y}\" stroke=\"#4477aa\" "
                   f"stroke-width=\"2\"/><circle cx=\"{x(score):.1f}\" cy=\"{y}\" r=\"4\" fill=\"#224466\"/>")
    out += labels + ["</g>"]
    out.append(f"<line x1=\"{gutter}\" y1=\"{bottom + 4}\" x2=\"{width - right}\" y2=\"{bottom + 4}\" stroke=\"#333\" "
               "class=\"axis\"/>")
    for t in ticks:
        out.append(f"<text x=\"{x(t):.1f}\" y=\"{bottom + 18}\" text-anchor=\"middle\" class=\"tick\">"
                   f"{tick_label(t, ticks[1] - ticks[0])}</text>")
    out.append(f"<text x=\"{(gutter + width - right) / 2:.0f}\" y=\"{bottom + 34}\" text-anchor=\"middle\">"
               f"{e(label)}</text>")
    return "".join(out) + "</svg>"
