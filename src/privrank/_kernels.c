/* privrank's compiled kernels (privrank/kernels.py says when they run; each caller keeps a numpy
 * loop that gives the same result).
 *
 * full_steps(i, j, wins, totals, linear, theta, lam, shift, tol, max_iter)
 *     Full Newton steps of the penalised logistic (Bradley-Terry-Luce) objective on a small item
 *     set: the inner loop of privrank.pairwise.btl.newton_btl. Same arithmetic as the numpy loop:
 *     per pair d = theta_i - theta_j, p = 1 / (1 + e^min(-d, 700)), r = n p - s (the gradient's pair
 *     term) and w = n p - n p p (the Hessian's edge weight); the gradient adds 2 lam theta and the
 *     linear term; the Newton system is the weighted Laplacian plus 2 lam I plus shift 1 1', solved
 *     here by Cholesky. A step is taken when it shrinks the gradient 2-norm to at most 0.9 of its
 *     value; otherwise, or when the Cholesky factorisation meets a pivot <= 0, the function returns
 *     and the numpy loop goes on from the same point (its line search, its LU solve).
 *     i, j: int64 item indices of the pairs; wins, totals: float64 per pair; linear: float64 per
 *     item or None; theta: float64 per item, the start, overwritten with the last accepted point.
 *     Returns (steps taken, gradient 2-norm at theta, status): status 0 when the loop ended as the
 *     numpy loop would (gradient norm <= tol, or max_iter steps), 1 when a full step did not shrink
 *     the gradient enough, 2 when the Newton matrix was not positive definite to rounding.
 *
 * outcome_counts(m, a, b, outcome)
 *     The per-pair statistic of raw outcomes (privrank.data.pair_counts.PairCounts.of_outcomes):
 *     a, b int64 item indices in 0 .. m-1, never equal; outcome int8, 1 (a preferred), -1 (b) or
 *     0 (a tie). Counted in one pass over the records into an m x m table (for m * m no larger than
 *     a few times the records), then read in order of the pairs (i < j). Returns (i, j, wins,
 *     totals) as bytearrays of int64, int64, float64, float64, one entry per pair compared:
 *     totals the records, wins the first item's wins with a tie as half a win. Exact: integer sums.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* gradient of the penalised objective at theta into g (m), edge weights into w (pairs); returns its 2-norm */
static double derivatives(Py_ssize_t m, Py_ssize_t pairs, const int64_t *i, const int64_t *j, const double *wins,
                          const double *totals, const double *linear, double lam, const double *theta, double *g,
                          double *w)
{
    for (Py_ssize_t k = 0; k < m; k++)
        g[k] = 0.0;
    for (Py_ssize_t k = 0; k < pairs; k++) {
        double e = -(theta[i[k]] - theta[j[k]]);
        double p = 1.0 / (1.0 + exp(e < 700.0 ? e : 700.0));
        double tp = totals[k] * p;
        double r = tp - wins[k];
        w[k] = tp - tp * p;
        g[i[k]] += r;
        g[j[k]] -= r;
    }
    double norm = 0.0;
    for (Py_ssize_t k = 0; k < m; k++) {
        if (lam != 0.0)
            g[k] += 2.0 * lam * theta[k];
        if (linear)
            g[k] += linear[k];
        norm += g[k] * g[k];
    }
    return sqrt(norm);
}

/* solve (Laplacian(w) + ridge I + shift 1 1') x = g by Cholesky in H (m x m, overwritten); 0 when
 * a pivot is not positive */
static int newton_step(Py_ssize_t m, Py_ssize_t pairs, const int64_t *i, const int64_t *j, const double *w,
                       double ridge, double shift, const double *g, double *H, double *x)
{
    for (Py_ssize_t k = 0; k < m * m; k++)
        H[k] = shift;
    for (Py_ssize_t k = 0; k < m; k++)
        H[k * m + k] += ridge;
    for (Py_ssize_t k = 0; k < pairs; k++) {
        int64_t a = i[k], b = j[k];
        H[a * m + a] += w[k];
        H[b * m + b] += w[k];
        H[a * m + b] -= w[k];
        H[b * m + a] -= w[k];
    }
    /* lower Cholesky factor L in the lower triangle: H = L L' */
    for (Py_ssize_t c = 0; c < m; c++) {
        double *row_c = H + c * m;
        double pivot = row_c[c];
        for (Py_ssize_t t = 0; t < c; t++)
            pivot -= row_c[t] * row_c[t];
        if (!(pivot > 0.0))
            return 0;
        double root = sqrt(pivot);
        row_c[c] = root;
        for (Py_ssize_t r = c + 1; r < m; r++) {
            double *row_r = H + r * m;
            double s = row_r[c];
            for (Py_ssize_t t = 0; t < c; t++)
                s -= row_r[t] * row_c[t];
            row_r[c] = s / root;
        }
    }
    for (Py_ssize_t r = 0; r < m; r++) { /* L y = g */
        double s = g[r];
        for (Py_ssize_t t = 0; t < r; t++)
            s -= H[r * m + t] * x[t];
        x[r] = s / H[r * m + r];
    }
    for (Py_ssize_t r = m - 1; r >= 0; r--) { /* L' x = y */
        double s = x[r];
        for (Py_ssize_t t = r + 1; t < m; t++)
            s -= H[t * m + r] * x[t];
        x[r] = s / H[r * m + r];
    }
    return 1;
}

static int get_buffer(PyObject *obj, Py_buffer *view, int writable, char kind, Py_ssize_t length, const char *name)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) < 0)
        return 0;
    /* kind: 'd' float64, 'q' int64, 'b' int8 */
    const char *format = view->format ? view->format : "B";
    char last = format[strlen(format) - 1];
    int ok = view->itemsize == (kind == 'b' ? 1 : 8) && view->ndim == 1 &&
             (kind == 'q' ? (last == 'l' || last == 'q') : last == kind);
    if (ok && length >= 0 && view->shape[0] != length)
        ok = 0;
    if (!ok) {
        PyErr_Format(PyExc_TypeError, "%s: a contiguous 1-d %s array of the expected length", name,
                     kind == 'd' ? "float64" : (kind == 'q' ? "int64" : "int8"));
        PyBuffer_Release(view);
        return 0;
    }
    return 1;
}

static PyObject *full_steps(PyObject *self, PyObject *args)
{
    PyObject *oi, *oj, *owins, *ototals, *olinear, *otheta;
    double lam, shift, tol;
    Py_ssize_t max_iter;
    if (!PyArg_ParseTuple(args, "OOOOOOdddn", &oi, &oj, &owins, &ototals, &olinear, &otheta, &lam, &shift, &tol,
                          &max_iter))
        return NULL;
    Py_buffer bi, bj, bwins, btotals, blinear, btheta;
    int have_linear = olinear != Py_None;
    if (!get_buffer(otheta, &btheta, 1, 'd', -1, "theta"))
        return NULL;
    Py_ssize_t m = btheta.shape[0];
    if (!get_buffer(oi, &bi, 0, 'q', -1, "i"))
        goto release_theta;
    Py_ssize_t pairs = bi.shape[0];
    if (!get_buffer(oj, &bj, 0, 'q', pairs, "j"))
        goto release_i;
    if (!get_buffer(owins, &bwins, 0, 'd', pairs, "wins"))
        goto release_j;
    if (!get_buffer(ototals, &btotals, 0, 'd', pairs, "totals"))
        goto release_wins;
    if (have_linear && !get_buffer(olinear, &blinear, 0, 'd', m, "linear"))
        goto release_totals;

    const int64_t *i = bi.buf, *j = bj.buf;
    for (Py_ssize_t k = 0; k < pairs; k++) {
        if (i[k] < 0 || i[k] >= m || j[k] < 0 || j[k] >= m) {
            PyErr_SetString(PyExc_ValueError, "an item index is out of range");
            goto release_all;
        }
    }
    double *theta = btheta.buf;
    const double *wins = bwins.buf, *totals = btotals.buf, *linear = have_linear ? blinear.buf : NULL;
    double *memory = PyMem_RawMalloc(sizeof(double) * (size_t)(m * m + 5 * m + 2 * pairs + 1));
    if (!memory) {
        PyErr_NoMemory();
        goto release_all;
    }
    double *H = memory, *g = H + m * m, *gc = g + m, *step = gc + m, *cand = step + m, *w = cand + m,
           *wc = w + pairs;
    Py_ssize_t it = 0;
    int status = 0;
    double gnorm;
    Py_BEGIN_ALLOW_THREADS
    gnorm = derivatives(m, pairs, i, j, wins, totals, linear, lam, theta, g, w);
    while (gnorm > tol && it < max_iter) {
        if (!newton_step(m, pairs, i, j, w, 2.0 * lam, shift, g, H, step)) {
            status = 2;
            break;
        }
        for (Py_ssize_t k = 0; k < m; k++)
            cand[k] = theta[k] - step[k];
        double gc_norm = derivatives(m, pairs, i, j, wins, totals, linear, lam, cand, gc, wc);
        if (!(gc_norm <= 0.9 * gnorm)) {
            status = 1;
            break;
        }
        it++;
        memcpy(theta, cand, sizeof(double) * (size_t)m);
        double *swap = g;
        g = gc;
        gc = swap;
        swap = w;
        w = wc;
        wc = swap;
        gnorm = gc_norm;
    }
    Py_END_ALLOW_THREADS
    PyMem_RawFree(memory);
    PyObject *result = Py_BuildValue("ndi", it, gnorm, status);
    if (have_linear)
        PyBuffer_Release(&blinear);
    PyBuffer_Release(&btotals);
    PyBuffer_Release(&bwins);
    PyBuffer_Release(&bj);
    PyBuffer_Release(&bi);
    PyBuffer_Release(&btheta);
    return result;

release_all:
    if (have_linear)
        PyBuffer_Release(&blinear);
release_totals:
    PyBuffer_Release(&btotals);
release_wins:
    PyBuffer_Release(&bwins);
release_j:
    PyBuffer_Release(&bj);
release_i:
    PyBuffer_Release(&bi);
release_theta:
    PyBuffer_Release(&btheta);
    return NULL;
}

static PyObject *outcome_counts(PyObject *self, PyObject *args)
{
    Py_ssize_t m;
    PyObject *oa, *ob, *ooutcome;
    if (!PyArg_ParseTuple(args, "nOOO", &m, &oa, &ob, &ooutcome))
        return NULL;
    if (m < 2 || m > 3037000499 / 2) {
        PyErr_SetString(PyExc_ValueError, "m must be between 2 and the pair keys' 64-bit range");
        return NULL;
    }
    Py_buffer ba, bb, bo;
    PyObject *result = NULL, *out[4] = {NULL, NULL, NULL, NULL};
    if (!get_buffer(oa, &ba, 0, 'q', -1, "a"))
        return NULL;
    Py_ssize_t n = ba.shape[0];
    if (!get_buffer(ob, &bb, 0, 'q', n, "b"))
        goto release_a;
    if (!get_buffer(ooutcome, &bo, 0, 'b', n, "outcome"))
        goto release_b;
    if (n >= ((Py_ssize_t)1 << 31)) {
        PyErr_SetString(PyExc_ValueError, "too many records for one table (at most 2^31 - 1)");
        goto release_outcome;
    }
    const int64_t *a = ba.buf, *b = bb.buf;
    const int8_t *outcome = bo.buf;
    /* per pair, records << 32 plus the sum of v = 1 + (the first item's outcome): 2 a win, 1 a tie */
    int64_t *table = PyMem_RawCalloc((size_t)m * (size_t)m, sizeof(int64_t));
    if (!table) {
        PyErr_NoMemory();
        goto release_outcome;
    }
    int bad = 0;
    Py_ssize_t pairs = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < n; k++) {
        int64_t x = a[k], y = b[k];
        int o = outcome[k];
        if (x < 0 || y < 0 || x >= m || y >= m || x == y || o < -1 || o > 1) {
            bad = 1;
            break;
        }
        if (x < y)
            table[x * m + y] += ((int64_t)1 << 32) + 1 + o;
        else
            table[y * m + x] += ((int64_t)1 << 32) + 1 - o;
    }
    if (!bad)
        for (Py_ssize_t x = 0; x < m; x++)
            for (Py_ssize_t y = x + 1; y < m; y++)
                pairs += table[x * m + y] != 0;
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_SetString(PyExc_ValueError, "a record has an item index out of range, the same item twice, or an "
                                          "outcome other than 1, 0 and -1");
        goto release_table;
    }
    for (int t = 0; t < 4; t++) {
        out[t] = PyByteArray_FromStringAndSize(NULL, pairs * 8);
        if (!out[t])
            goto release_out;
    }
    int64_t *oi = (int64_t *)PyByteArray_AS_STRING(out[0]), *oj = (int64_t *)PyByteArray_AS_STRING(out[1]);
    double *owins = (double *)PyByteArray_AS_STRING(out[2]), *ototals = (double *)PyByteArray_AS_STRING(out[3]);
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t p = 0;
    for (Py_ssize_t x = 0; x < m; x++)
        for (Py_ssize_t y = x + 1; y < m; y++) {
            int64_t packed = table[x * m + y];
            if (packed) {
                oi[p] = x;
                oj[p] = y;
                ototals[p] = (double)(packed >> 32);
                owins[p] = 0.5 * (double)(packed & 0xffffffff);
                p++;
            }
        }
    Py_END_ALLOW_THREADS
    result = PyTuple_Pack(4, out[0], out[1], out[2], out[3]);
release_out:
    for (int t = 0; t < 4; t++)
        Py_XDECREF(out[t]);
release_table:
    PyMem_RawFree(table);
release_outcome:
    PyBuffer_Release(&bo);
release_b:
    PyBuffer_Release(&bb);
release_a:
    PyBuffer_Release(&ba);
    return result;
}

static PyMethodDef methods[] = {
    {"full_steps", full_steps, METH_VARARGS, "Full Newton steps of the penalised logistic BTL objective (see the source)."},
    {"outcome_counts", outcome_counts, METH_VARARGS, "The per-pair statistic of raw outcomes (see the source)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_kernels", "privrank's compiled kernels (see privrank.kernels).", -1, methods,
};

PyMODINIT_FUNC PyInit__kernels(void)
{
    return PyModule_Create(&module);
}
