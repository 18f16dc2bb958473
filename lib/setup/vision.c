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

void ml_lf_image_resize(uint64_t w, uint64_t h, uint64_t max_pixels, uint64_t min_pixels, uint64_t *ow, uint64_t *oh)
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

/* The processor's own pixel bounds, per tower (the checkpoints' preprocessor_config.json:
 * Qwen2.5-VL min_pixels 3136, max_pixels 12845056; Qwen3-VL / Qwen3.5 size shortest_edge 65536,
 * longest_edge 16777216). LLaMA-Factory's image_max_pixels lies inside them by default. */
static void proc_bounds(enum ml_vision_kind k, uint64_t *lo, uint64_t *hi)
{
    *lo = k == ML_VISION_QWEN2_5 ? 3136 : 65536;
    *hi = k == ML_VISION_QWEN2_5 ? 12845056 : 16777216;
}

/* One video: frames min(video_maxlen, floor(seconds x fps)) (mm_plugin.py
 * _get_video_sample_indices), padded to a whole number of temporal patches, each frame resized
 * within video_max_pixels like an image. */
static void video_plan(const struct ml_vlm_cfg *v, const struct ml_vision *vs, struct ml_vlm_plan *p)
{
    uint64_t maxlen = v->video_maxlen ? v->video_maxlen : 128;
    uint64_t fps = v->video_fps_milli ? v->video_fps_milli : 2000;
    uint64_t frames = v->video_seconds ? (uint64_t)v->video_seconds * fps / 1000 : maxlen;
    if (frames > maxlen)
        frames = maxlen;
    if (!frames)
        frames = 1;
    uint64_t tp = vs->temporal_patch ? vs->temporal_patch : 1;
    frames = (frames + tp - 1) / tp * tp;
    uint64_t vmax = v->video_max_pixels ? v->video_max_pixels : 65536;
    uint64_t vmin = v->video_min_pixels ? v->video_min_pixels : 256;
    uint64_t side = isqrt(vmax), lo, hi, patches;
    proc_bounds(vs->kind, &lo, &hi);
    uint64_t tok = ml_visual_grid(side, side, vmax, vmin, vs->patch, vs->merge, lo, hi, &patches);
    p->video_frames = frames;
    p->tokens_per_video = frames / tp * tok;
    p->patches_per_video = frames / tp * patches;
}

void ml_vlm_resolve(const struct ml_vlm_cfg *v, const struct ml_arch *a, struct ml_vlm_plan *p)
{
    memset(p, 0, sizeof(*p));
    const struct ml_vision *vs = &a->vision;
    if (vs->kind == ML_VISION_NONE)
        return;
    uint64_t images = v->images_set ? v->images_per_sample : 1;
    uint64_t patch = vs->patch ? vs->patch : 14;
    if (vs->kind == ML_VISION_QWEN2_5 || vs->kind == ML_VISION_QWEN3) {
        uint64_t imax = v->image_max_pixels ? v->image_max_pixels : 589824;
        uint64_t imin = v->image_min_pixels ? v->image_min_pixels : 1024;
        uint64_t w = v->image_width ? v->image_width : isqrt(imax);
        uint64_t h = v->image_height ? v->image_height : isqrt(imax);
        uint64_t lo, hi;
        proc_bounds(vs->kind, &lo, &hi);
        p->tokens_per_image = ml_visual_grid(w, h, imax, imin, vs->patch, vs->merge, lo, hi, &p->patches_per_image);
        if (v->videos_per_sample)
            video_plan(v, vs, p);
    } else {
        /* Gemma 3 (SigLIP): every image a fixed image_size crop, mm_tokens_per_image tokens;
         * Llama 4: one image_size tile, (side / patch)^2 patches, pixel shuffle 0.5 = 1/4 of
         * them as tokens (Llama4VisionModel; tiles beyond one are not modelled). */
        uint64_t side = vs->image_size ? vs->image_size / patch : 0;
        p->patches_per_image = side * side;
        p->tokens_per_image = vs->tokens_per_image ? vs->tokens_per_image : p->patches_per_image / 4;
    }
    p->tokens = images * p->tokens_per_image + (uint64_t)v->videos_per_sample * p->tokens_per_video;
    p->patches = images * p->patches_per_image + (uint64_t)v->videos_per_sample * p->patches_per_video;
}
