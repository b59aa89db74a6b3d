// A respondent's place in the survey across devices: the links that carry it, and what the server
// already holds of it.
//
// An invitation link (#invite=CODE) opened on a second device registers as the same respondent: the
// server derives the token from the code. On an open survey the page offers a link of its own,
// #resume=TOKEN, in the URL's fragment (never sent to the server with the page request, nor written
// in a proxy's log). Either way the page, on a device that did not just register, asks the server
// which pairs (or whether the ballot) it holds (POST api/progress) and marks them sent, so that no
// pair is asked or randomized twice; answers not yet sent stay on the device that drew them.

export const INVITATION = /^[A-Za-z0-9_-]{22}$/;  // secrets.token_urlsafe(16)
export const TOKEN = /^[A-Za-z0-9_-]{32}$/;       // secrets.token_urlsafe(24)

export const BY_INVITATION = 'This survey is by invitation only. Please open it with the link from your invitation.';
export const INVITATION_USED = 'This invitation link is not valid, or it was first opened before this survey let '
  + 'an invitation continue on another device, so it works only in the browser where it was first opened. Please '
  + 'continue there, or ask the survey\'s organisers for a new invitation.';

// The codes of a link BASE_URL/#invite=CODE or #resume=TOKEN: an invitation code is kept (`withMemo`, the page's
// memo of `survey`) until the registration succeeds, unless this browser is registered already; a resume token
// becomes the token of a browser that has none. Both leave the address bar, so that they are not shared,
// bookmarked or shown on screen. Returns whether the link held a code of another shape (an incomplete link).
export async function takeLink(survey, withMemo) {
  const params = new URLSearchParams(location.hash.slice(1));
  const code = params.get('invite');
  const resume = params.get('resume');
  if (code === null && resume === null) return false;
  if (survey.invitations && INVITATION.test(code)) await withMemo((memo) => { if (!memo.token) memo.invite = code; });
  if (TOKEN.test(resume)) await withMemo((memo) => { memo.token ||= resume; });
  history.replaceState(null, '', location.pathname + location.search);
  return (survey.invitations && code !== null && !INVITATION.test(code)) || (resume !== null && !TOKEN.test(resume));
}

// Mark in `memo` (the page's memo of `survey`) what the server holds, from api/progress's `data`: each pair
// reported ({"pairs": [[item_a, item_b], ...]}) or the ballot ({"ballot": true}) becomes a sent entry, unless
// this device has one already (a report it drew is sent as it is: stored once, or refused as answered).
// Returns false, changing nothing, for data of another shape.
export function markAnswered(memo, data, survey) {
  if (survey.design === 'ranking') {
    if (typeof data.ballot !== 'boolean') return false;
    if (data.ballot && !memo.ballot) memo.ballot = { sent: true };
    return true;
  }
  if (!Array.isArray(data.pairs)) return false;
  const pairs = data.pairs.map((p) => (Array.isArray(p) && p.length === 2 ? p.map((x) => survey.items.indexOf(x))
    : [-1, -1]));
  if (!pairs.every(([i, j]) => i >= 0 && j >= 0 && i !== j)) return false;
  for (const [i, j] of pairs) (memo.pairs ||= {})[`${Math.min(i, j)}|${Math.max(i, j)}`] ||= { sent: true };
  return true;
}

// The note "Continue on another device" under the pairs: on an open survey with a link carrying `token`
// (anyone who has it can answer in the respondent's place), on an invitation-only one the invitation's link.
export function offerElsewhere(survey, token) {
  const text = document.getElementById('elsewhere-text');
  const link = document.getElementById('elsewhere-link');
  if (survey.invitations) {
    text.textContent = 'Open the link of your invitation on the other device. The pairs you have answered are '
      + 'not asked again there, and your answers count towards the same limit.';
  } else {
    link.href = `${location.origin}${location.pathname}#resume=${token}`;
    link.textContent = link.href;
    text.textContent = 'Open this link on the other device. It carries your place in this survey, not your '
      + 'answers: the pairs you have answered are not asked again there, and your answers count towards the same '
      + 'limit. Keep it to yourself: whoever opens it can answer in your place.';
  }
  link.hidden = survey.invitations;
  document.getElementById('elsewhere').hidden = false;
}
