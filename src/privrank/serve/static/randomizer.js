// Local randomizers that run in the respondent's browser: the true answer never leaves it.
// The same laws as privrank.mechanisms.randomized_response.randomize_answer (one comparison)
// and privrank.mechanisms.pairwise_matrix.local_pair_reports (a ranking, Duchi et al. l2).
// No dependencies; randomness from crypto.getRandomValues only.

const TWO_26 = 67108864;          // 2^26
const TWO_53 = 9007199254740992;  // 2^53
const words = new Uint32Array(2);

// Uniform on {k / 2^53 : k = 0 .. 2^53 - 1}, i.e. in [0, 1): the top 27 bits of one 32-bit
// word of crypto.getRandomValues and the top 26 bits of another form a uniform 53-bit integer.
export function uniform() {
  crypto.getRandomValues(words);
  return ((words[0] >>> 5) * TWO_26 + (words[1] >>> 6)) / TWO_53;
}

// The epsilon of one answer that this page accepts, as privrank.serve.survey.EPSILON_RANGE:
// below, an answer is noise without signal; above, it is barely protected (at 40 the true
// answer would be kept with probability 1 - 4e-18). The page checks the served epsilon itself.
export const EPSILON_RANGE = [0.01, 10];

export function checkEpsilon(eps) {
  const [lo, hi] = EPSILON_RANGE;
  if (typeof eps !== 'number' || !(eps >= lo && eps <= hi)) {
    throw new RangeError(`epsilon must be a number in [${lo}, ${hi}]`);
  }
}

// Probability e^eps / (1 + e^eps) = 1 / (1 + e^-eps) that randomized response keeps an answer
// (it flips it with the complementary probability 1 / (1 + e^eps)).
export function keepProbability(eps) {
  checkEpsilon(eps);
  return 1 / (1 + Math.exp(-eps));
}

// Randomized response for one comparison. truth: 1 (item_a preferred), -1 (item_b) or
// 0 (no preference). A 0 is first replaced by a fair coin (+1 or -1 with probability 1/2
// each); the answer is then kept with probability e^eps/(1+e^eps) and flipped otherwise:
//   P(report = truth) = e^eps / (1 + e^eps) for truth = +-1,   P(report = +1) = 1/2 for 0.
// For every output the likelihood ratio between any two inputs is at most e^eps.
// Returns {report: 1 | -1, flipped}; only the report may be sent.
export function randomizeComparison(truth, eps) {
  if (truth !== 1 && truth !== -1 && truth !== 0) throw new RangeError('truth must be 1, -1 or 0');
  const keep = keepProbability(eps);
  const answer = truth === 0 ? (uniform() < 0.5 ? 1 : -1) : truth;
  const flipped = !(uniform() < keep);
  return { report: flipped ? -answer : answer, flipped };
}

// The unordered pairs i < j of m items in row-major order (numpy.triu_indices(m, 1)).
export function pairs(m) {
  const out = [];
  for (let i = 0; i < m; i++) for (let j = i + 1; j < m; j++) out.push([i, j]);
  return out;
}

// A ranking's centred pair vector v = (1[i ranked before j] - 1/2) over the pairs i < j in
// row-major order; order lists the item indices 0 .. m-1 best first. ||v|| = sqrt(M)/2.
export function pairVector(order) {
  const m = order.length;
  const position = new Array(m).fill(-1);
  order.forEach((item, k) => {
    if (!Number.isInteger(item) || item < 0 || item >= m || position[item] >= 0) {
      throw new RangeError('order must be a permutation of 0 .. m-1');
    }
    position[item] = k;
  });
  if (m < 2) throw new RangeError('a ranking needs at least two items');
  return pairs(m).map(([i, j]) => (position[i] < position[j] ? 0.5 : -0.5));
}

// n independent standard normals by Box-Muller: with U1, U2 uniform in [0, 1),
// sqrt(-2 log(1 - U1)) (cos 2 pi U2, sin 2 pi U2) are two independent N(0, 1)
// (1 - U1 lies in (0, 1], so the logarithm is finite).
export function normals(n) {
  const g = new Array(n);
  for (let k = 0; k < n; k += 2) {
    const radius = Math.sqrt(-2 * Math.log(1 - uniform()));
    const angle = 2 * Math.PI * uniform();
    g[k] = radius * Math.cos(angle);
    if (k + 1 < n) g[k + 1] = radius * Math.sin(angle);
  }
  return g;
}

// Duchi, Jordan and Wainwright's l2 mechanism for a ranking (as local_pair_reports): the
// voter's v has norm exactly r = sqrt(M)/2, so the rounding step always keeps the direction
// u = v/||v||. G / ||G|| (G of M standard normals) is uniform on the unit sphere; it is put in
// the hemisphere towards u (<Z, u> > 0) with probability e^eps/(e^eps+1), in the opposite
// one otherwise, and scaled to norm `scale` (duchi_scale, which makes E[Z] = v).
// Returns {vector: Z (M numbers), towards}; only the vector may be sent.
export function duchiDraw(order, eps, scale) {
  if (typeof scale !== 'number' || !(scale > 0) || !Number.isFinite(scale)) {
    throw new RangeError('scale must be a finite number > 0');
  }
  const keep = keepProbability(eps);
  const v = pairVector(order);
  const r = Math.sqrt(v.length) / 2;
  let g;
  let norm = 0;
  while (!(norm > 0)) {  // an all-zero G has probability 0; draw again rather than divide by 0
    g = normals(v.length);
    norm = Math.sqrt(g.reduce((s, x) => s + x * x, 0));
  }
  const side = g.reduce((s, x, k) => s + x * v[k] / r, 0) < 0 ? -1 : 1;
  const towards = uniform() < keep;
  const factor = (scale * side * (towards ? 1 : -1)) / norm;
  return { vector: g.map((x) => x * factor), towards };
}

// The report alone: the vector of duchiDraw.
export function duchiReport(order, eps, scale) {
  return duchiDraw(order, eps, scale).vector;
}
