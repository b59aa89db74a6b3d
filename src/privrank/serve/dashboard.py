"""The survey's dashboard: the live private ranking of the stored reports, its guarantee, how far fake
respondents could steer it (the manipulation margin), and the registration rate.

Everything here is post-processing of the randomized reports the store holds (no privacy cost).
The page has no script and no inline style: it lives under ``default-src 'self'``.
"""
from __future__ import annotations

import html
import math
import warnings
from dataclasses import replace
from statistics import NormalDist
from urllib.parse import quote

from ..errors import InputError
from .survey import RESPONDENT_UNITS

#: reports each compared item needs before the dashboard shows 95% intervals (normal approximation)
MIN_REPORTS_FOR_INTERVALS = 20
#: largest ranking survey ranked by exact Kemeny on the dashboard (Borda row sums above)
EXACT_KEMENY_ITEMS = 12


def unit_note(invitation_only: bool) -> str:
    """Who one respondent is, in words: what the per-respondent guarantee protects."""
    if invitation_only:
        return ("A respondent is an invited respondent: each one-time invitation registers one respondent (an "
                "invited person who forwards their link passes their place on).")
    return ("A respondent is a browser (a random token kept in it), not a person: one person with two browsers, or "
            "who clears the browser's storage, counts as two respondents.")


def pairs_view(survey, store, invitation_only: bool = False) -> dict:
    """The private BTL ranking of the pairs reports (``fit_btl`` defaults, as ``privrank rank``) with
    95% sandwich intervals, or the reason there is none yet. The guarantee per respondent is stated
    per browser, or per invited respondent on an invitation-only survey."""
    from ..data.comparison_files import read_comparisons
    from ..inference import confidence_intervals, manipulation_margin
    from ..pairwise.btl import fit_btl
    from ..pairwise.release import TIE_NOTE, local_guarantee

    eps = survey.epsilon
    guarantee = local_guarantee(eps, eps * survey.max_answers, "randomized response (in the respondent's browser)",
                                note=f"{TIE_NOTE} {unit_note(invitation_only)}")
    view = {"guarantee": replace(guarantee, user=RESPONDENT_UNITS[invitation_only]), "notes": [], "score": "BTL score"}
    table = store.pair_reports()
    compared = set(table["item_a"].to_pylist()) | set(table["item_b"].to_pylist())
    if len(compared) < 2:
        return {**view, "waiting": "Not enough data yet: fewer than two items have been compared."}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        reports = read_comparisons(table)
        fit = fit_btl(reports)
        if fit.info["n_components"] > 1:
            return {**view, "waiting": "Not enough data yet: the comparisons so far split the items into groups "
                                       "never compared with each other."}
        ci = None
        if fit.release.counts.items_compared().min() < MIN_REPORTS_FOR_INTERVALS:
            view["notes"].append(f"No intervals yet: each item needs {MIN_REPORTS_FOR_INTERVALS} reports.")
        else:
            try:
                ci = confidence_intervals(fit)
            except InputError as exc:
                view["notes"].append(f"No intervals: {exc}")
    view["notes"] += [str(w.message) for w in caught]
    absent = [x for x in survey.items if x not in compared]
    if absent:
        view["notes"].append(f"Not yet compared, so not ranked: {', '.join(absent)}.")
    rows = [(fit.items[k], fit.scores[k]) + ((ci.lower[k], ci.upper[k]) if ci else (None, None))
            for k in fit.order]
    if ci:
        view["notes"].append(ci.describe())
    margin = manipulation_margin(reports, max_answers=survey.max_answers)
    return {**view, "rows": rows, "margin": margin.top, "margin_text": margin.describe()}


def ranking_view(survey, store, invitation_only: bool = False) -> dict:
    """The ranking of the ballots: ``w~ = 1/2 + mean of the randomized vectors`` (unbiased), ordered by
    exact Kemeny for at most ``EXACT_KEMENY_ITEMS`` items, else by Borda row sums; each item's score is
    its Borda share ``sum_j w~_ij / (m - 1)``, with a conservative 95% interval for its expectation over
    the respondents: every entry of a report has second moment ``B^2/M``, so the share's variance is at
    most ``B^2 / (M n (m - 1))`` whatever the ballots."""
    from ..aggregation.kemeny import borda, exact_kemeny
    from ..inference.manipulation import ballot_margin
    from ..guarantees import UNIT_RANKING, Guarantee
    from ..mechanisms.pairwise_matrix import matrix_from_upper

    view = {"guarantee": Guarantee(epsilon=survey.epsilon, model="local", unit=UNIT_RANKING,
                                   mechanism="Duchi et al. l2 randomizer of the pairwise vector (in the "
                                             "respondent's browser)",
                                   note=f"Every respondent sends one ballot. {unit_note(invitation_only)}"),
            "notes": [], "score": "Borda share"}
    V = store.vectors()
    n, m = V.shape[0], len(survey.items)
    if n == 0:
        return {**view, "waiting": "Not enough data yet: no ballot has arrived."}
    method = exact_kemeny if m <= EXACT_KEMENY_ITEMS else borda
    W = matrix_from_upper(0.5 + V.mean(axis=0), m)
    order = method(W)
    share = W.sum(axis=1) / (m - 1)
    half = NormalDist().inv_cdf(0.975) * survey.duchi_scale() / math.sqrt(survey.dimension * n * (m - 1))
    how = "exact Kemeny" if m <= EXACT_KEMENY_ITEMS else "Borda row sums"
    view["notes"] += [f"Order: {how} on the estimated pairwise matrix.",
                      "95% intervals for each item's expected Borda share (conservative, including the noise)."]
    margin = ballot_margin(V, survey.items, survey.duchi_scale(), method)
    count = f"more than {margin.fakes:,}" if margin.more_than else f"{margin.fakes:,}"
    change = "do not change" if margin.more_than else "changes" if count == "1" else "change"
    text = (f"{count} fake respondent{'' if count == '1' else 's'} promoting {margin.item} {change} the top item; "
            f"each sends one unrandomized ballot (a vector of the accepted norm favouring it over {margin.above}); "
            "local DP does not prevent such manipulation")
    return {**view, "rows": [(survey.items[k], share[k], share[k] - half, share[k] + half) for k in order],
            "margin": margin, "margin_text": text}


def registrations_html(store, issued: int, used: int, recent=None) -> str:
    """The registration rate: respondents per UTC day (stored), in the last hour since start-up (this
    process's memory, never stored), and the invitations issued and used."""
    days = store.registrations_by_day()
    text = "Registrations per day (UTC): " + ("; ".join(f"{day}: {n}" for day, n in days) if days else "none yet") + "."
    if recent is not None:
        n, minutes = recent.last_hour()
        text += (f" In the last hour: {n}." if minutes >= 59.5 else
                 f" Since start-up {minutes:.0f} minute{'s' * (round(minutes) != 1)} ago: {n}.")
    if issued:
        text += f" Invitations: {issued} issued, {used} used."
    return f"<p id=\"registrations\">{html.escape(text)}</p>"


def dashboard_page(survey, store, token: str | None = None, recent=None, views: dict | None = None) -> str:
    """The dashboard's HTML (no script, no inline style: the page lives under ``default-src 'self'``).
    ``recent`` is the server's :class:`RecentRegistrations`; ``views``, a dict the server keeps, caches
    the ranking by the number of reports it was fitted on (the store only ever appends, so that number
    identifies the reports: the fit and its margin are computed once per new report, not per visit)."""
    respondents, reports = store.counts()
    issued, used = store.invitations()
    unit = RESPONDENT_UNITS[bool(issued)]
    views = {} if views is None else views
    view = views.get((reports, bool(issued)))
    if view is None:
        view = (pairs_view if survey.design == "pairs" else ranking_view)(survey, store, bool(issued))
        views.clear()
        views[reports, bool(issued)] = view
    e = html.escape
    g = view["guarantee"]
    parts = [f"<h1>{e(survey.title)}</h1>", f"<p>{e(survey.question)}</p>",
             f"<p id=\"counts\">Respondents: {respondents} ({unit}s). Reports: {reports}. Design: "
             f"{e(survey.design)}, epsilon {survey.epsilon:g} per answer, at most {survey.max_answers} per {unit}.</p>",
             registrations_html(store, issued, used, recent), "<h2>Private ranking</h2>"]
    if "rows" in view:
        cells = "".join(f"<tr><td>{r + 1}</td><td class=\"item\">{e(item)}</td><td>{score:.4g}</td>"
                        f"<td>{'' if lo is None else f'[{lo:.4g}, {hi:.4g}]'}</td></tr>"
                        for r, (item, score, lo, hi) in enumerate(view["rows"]))
        parts.append(f"<table id=\"ranking\"><thead><tr><th>rank</th><th>item</th><th>{view['score']}</th>"
                     f"<th>95% interval</th></tr></thead><tbody>{cells}</tbody></table>")
        if view["rows"][0][2] is not None:
            parts.append(interval_svg(view["rows"], view["score"]))
        parts.append(f"<p id=\"margin\"><strong>Manipulation margin:</strong> {e(view['margin_text'])}. A "
                     f"small margin means a few fake {unit}s could decide the top item: register respondents by "
                     "invitation, and compare with the registration rate above.</p>")
    else:
        parts.append(f"<p id=\"waiting\">{e(view['waiting'])}</p>")
    parts += ["<h2>Guarantee</h2>", f"<p>{e(g.describe())}</p>", f"<p>In plain words: {e(g.plain())}</p>"]
    parts += [f"<ul>{''.join(f'<li>{e(n)}</li>' for n in view['notes'])}</ul>"] if view["notes"] else []
    if survey.design == "pairs":
        query = f"?token={e(quote(token, safe=''))}" if token else ""
        parts.append(f"<p><a href=\"/export.csv{query}\">Export the reports (CSV for privrank rank)</a></p>")
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta http-equiv=\"refresh\" "
            f"content=\"30\"><title>{e(survey.title)}: dashboard</title>"
            "<link rel=\"stylesheet\" href=\"/static/dashboard.css\">"
            f"</head><body><main>{''.join(parts)}</main></body></html>")


def interval_svg(rows, label: str) -> str:
    """An inline SVG of each item's estimate and interval, one row per item in rank order."""
    e = html.escape
    left, width, step, top = 240, 760, 20, 16
    lo = min(r[2] for r in rows)
    hi = max(r[3] for r in rows)
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return ""
    span = (hi - lo) or 1.0
    lo, hi = lo - 0.05 * span, hi + 0.05 * span

    def x(v):
        return left + (v - lo) / (hi - lo) * (width - left - 20)
    bottom = top + step * len(rows)
    out = [f"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{bottom + 40}\" role=\"img\" "
           f"aria-label=\"{e(label)} with 95% intervals\" font-family=\"sans-serif\" font-size=\"12\">"]
    if lo < 0 < hi:
        out.append(f"<line x1=\"{x(0):.1f}\" y1=\"{top - 8}\" x2=\"{x(0):.1f}\" y2=\"{bottom}\" stroke=\"#bbb\" "
                   "stroke-dasharray=\"4 3\"/>")
    for k, (item, score, a, b) in enumerate(rows):
        y = top + step * k
        out.append(f"<text x=\"{left - 8}\" y=\"{y + 4}\" text-anchor=\"end\">{e(str(item))}</text>"
                   f"<line x1=\"{x(a):.1f}\" y1=\"{y}\" x2=\"{x(b):.1f}\" y2=\"{y}\" stroke=\"#4477aa\" "
                   f"stroke-width=\"2\"/><circle cx=\"{x(score):.1f}\" cy=\"{y}\" r=\"4\" fill=\"#224466\"/>")
    out.append(f"<line x1=\"{left}\" y1=\"{bottom}\" x2=\"{width - 20}\" y2=\"{bottom}\" stroke=\"#333\"/>")
    for t in range(5):
        v = lo + (hi - lo) * t / 4
        out.append(f"<text x=\"{x(v):.1f}\" y=\"{bottom + 16}\" text-anchor=\"middle\">{v:.3g}</text>")
    out.append(f"<text x=\"{(left + width) / 2:.0f}\" y=\"{bottom + 34}\" text-anchor=\"middle\">{e(label)}</text>")
    return "".join(out) + "</svg>"
