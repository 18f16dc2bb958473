/*
 * vision.c - visual tokens per image, as LLaMA-Factory and the Qwen processors size them (see
 * train.h, ml_visual_grid). Integer arithmetic only: the square roots and roundings of the
 * Python code are computed exactly (Python's round() rounds halves to even).
 *
 * LLaMA-Factory data/mm_plugin.py MMPluginMixin._preprocess_image: an image over image_max_pixels
 * (default 768 x 768) is scaled by sqrt(max / (w h)) with int() truncation, one under
 * image_min_pixels (32 x 32) scaled up likewise; Qwen2VLPlugin then keeps each side >= 28.
 * transformers image_processing_qwen2_vl.py smart_resize (factor = patch x merge): each side
 * rounded to the factor; over max_pixels: floor(side / beta / factor) x factor with beta =
 * sqrt(h w / max_pixels); under min_pixels: ceil(side x beta / factor) x factor.
 */
#include "memledger/train.h"

#include <string.h>

/* floor(sqrt(x)). */
static uint64_t isqrt(uint64_t x)
{
    uint64_t r = 0, bit = (uint64_t)1 << 62;
    while (bit > x)
        bit >>= 2;
    while (bit) {
        if (x >= r + bit) {
            x -= r + bit;
            r = (r >> 1) + bit;
        } else {
            r >>= 1;
        }
        bit >>= 2;
    }
    return r;
}

/* round(n / d) * d with Python's round (halves to even). */
static uint64_t round_to(uint64_t n, uint64_t d)
{
    uint64_t q = n / d, r = n % d;
    if (2 * r > d || (2 * r == d && (q & 1)))
        q++;
    return q * d;
}

/* floor(a * sqrt(num / den)) for the int() of _preprocess_image: floor(sqrt(a^2 num / den)). */
static uint64_t scale_side(uint64_t a, uint64_t num, uint64_t den)
{
    return isqrt(a * a / den * num + (a * a % den) * num / den);
}

void ml_lf_image_resize(uint64_t w, uint64_t h, uint64_t max_pixels, uint64_t min_pixels, uint64_t *ow,
                        uint64_t *oh)
{
    if (w && h && max_pixels && w * h > max_pixels) {
        uint64_t nw = scale_side(w, max_pixels, w * h), nh = scale_side(h, max_pixels, w * h);
        w = nw;
        h = nh;
    }
    if (w && h && min_pixels && w * h < min_pixels) {
        uint64_t nw = scale_side(w, min_pixels, w * h), nh = scale_side(h, min_pixels, w * h);
        w = nw;
        h = nh;
    }
    *ow = w;
    *oh = h;
}

/* ceil(sqrt(side^2 x min / area) / f) x f: the smallest multiple k f with (k f)^2 area >= side^2 min. */
static uint64_t grow_side(uint64_t side, uint64_t area, uint64_t min_pixels, uint64_t f)
{
    uint64_t k = scale_side(side, min_pixels, area) / f;
    while ((k * f) * (k * f) * area < side * side * min_pixels)
        k++;
    return k * f;
}

void ml_smart_resize(uint64_t h, uint64_t w, uint64_t factor, uint64_t min_pixels, uint64_t max_pixels, uint64_t *oh,
                     uint64_t *ow)
{
    uint64_t hb = round_to(h, factor), wb = round_to(w, factor);
    if (hb < factor)
        hb = factor;
    if (wb < factor)
        wb = factor;
    if (max_pixels && hb * wb > max_pixels) {
        hb = scale_side(h, max_pixels, h * w) / factor * factor;
        wb = scale_side(w, max_pixels, h * w) / factor * factor;
        if (hb < factor)
            hb = factor;
        if (wb < factor)
            wb = factor;
    } else if (min_pixels && hb * wb < min_pixels) {
        hb = grow_side(h, h * w, min_pixels, factor);
        wb = grow_side(w, h * w, min_pixels, factor);
    }
    *oh = hb;
    *ow = wb;
}

uint64_t ml_visual_grid(uint64_t w, uint64_t h, uint64_t image_max_pixels, uint64_t image_min_pixels, uint32_t patch,
                        uint32_t merge, uint64_t proc_min_pixels, uint64_t proc_max_pixels, uint64_t *patches)
{
    uint64_t lw, lh, rh, rw;
    ml_lf_image_resize(w, h, image_max_pixels, image_min_pixels, &lw, &lh);
    if (lw < 28) /* Qwen2VLPlugin._preprocess_image: min side 28 */
        lw = 28;
    if (lh < 28)
        lh = 28;
    uint64_t m = merge ? merge : 1, p = patch ? patch : 14;
    ml_smart_resize(lh, lw, p * m, proc_min_pixels, proc_max_pixels, &rh, &rw);
    uint64_t n = (rh / p) * (rw / p);
    if (patches)
        *patches = n;
    return n / (m * m);
}
