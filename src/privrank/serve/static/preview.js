// The survey's preview, BASE_URL/#preview: the respondent's page as it is, every screen of it, for the
// survey's team. Nothing of a preview leaves the page or stays in the browser: the page registers no
// respondent and sends no report (every POST is answered here, as the server would have stored it), and
// its memo lives in this page's memory only, apart from a respondent's in localStorage, which it never
// reads or writes (a reload starts the preview afresh). The thank-you page shows the redirect without
// going there by itself.

export const PREVIEW = new URLSearchParams(location.hash.slice(1)).has('preview');

// The memo a preview starts with: registered already, under a token no server issued (of a token's shape, so
// that the "Continue on another device" note shows as it does to a respondent), so that the page asks for no
// registration and an invitation-only survey is previewed without an invitation.
const FRESH = JSON.stringify({ token: 'preview_token_no_server_issued__' });
const kept = new Map();
const inMemory = {
  getItem: (key) => kept.get(key) ?? FRESH,
  setItem: (key, value) => { kept.set(key, value); },
};

// Where the page keeps its memo: this page's memory in a preview, else localStorage.
export const memos = () => (PREVIEW ? inMemory : localStorage);

// fetch(path, init), except in a preview, whose POSTs never leave the page: each is answered here as the
// server answers a new respondent, asking what it answered already (200: nothing) or sending a report (201: stored).
export function fetchOrPreview(path, init) {
  if (!PREVIEW || init.method !== 'POST') return fetch(path, init);
  const [status, body] = path === 'api/progress' ? [200, { pairs: [], ballot: false }] : [201, {}];
  const headers = { 'Content-Type': 'application/json' };
  return Promise.resolve(new Response(JSON.stringify(body), { status, headers }));
}

// What a preview's thank-you page says under the redirect's "Continue" link.
export const ONWARD_NOTE = 'A respondent\'s page goes on there by itself after a few seconds; the preview does not.';

// The banner "Preview: your answers are not sent or kept" (index.html), on every screen of a preview.
if (PREVIEW) document.getElementById('preview-banner').hidden = false;
