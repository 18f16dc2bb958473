/*
 * train_yaml_vlm.c - the vision-language keys of a LLaMA-Factory YAML (freeze switches, resize
 * limits) and memledger's own keys for the data's shape (docs/train-config.md).
 */
#include "train_yaml_int.h"

/* ---- vision-language training ------------------------------------------------------------- */

/* "1024x768" (or 1024X768, 1024*768): width and height in pixels, each 1 to 65536. */
static bool parse_size(const char *v, uint64_t *w, uint64_t *h)
{
    const char *x = v;
    while (*x && *x != 'x' && *x != 'X' && *x != '*')
        x++;
    if (!*x)
        x = NULL;
    char a[16], b[16];
    if (!x || (size_t)(x - v) >= sizeof(a) || strlen(x + 1) >= sizeof(b))
        return false;
    memcpy(a, v, (size_t)(x - v));
    a[x - v] = '\0';
    (void)snprintf(b, sizeof(b), "%s", x + 1);
    return ml_count_parse(a, w, NULL) == ML_OK && ml_count_parse(b, h, NULL) == ML_OK && *w && *h && *w <= 65536 &&
           *h <= 65536;
}

enum ml_status ml_ty_special_vlm(struct ctx *c, const struct key_def *d, const char *val)
{
    struct ml_vlm_cfg *v = &c->t->vlm;
    const char *key = d->key;
    bool b = false;
    uint64_t n = 0;
    double x;
    enum ml_status st = ML_OK;
    switch (d->id) {
    case S_FREEZE_VISION:
    case S_FREEZE_PROJ:
    case S_FREEZE_LANG:
        if ((st = ml_ty_get_bool(c, key, val, &b)) != ML_OK)
            return st;
        if (d->id == S_FREEZE_VISION)
            v->vision_trainable = !b;
        else if (d->id == S_FREEZE_PROJ)
            v->projector_trainable = !b;
        else
            v->language_frozen = b;
        return ML_OK;
    case S_IMG_MAX:
    case S_IMG_MIN:
    case S_VID_MAX:
    case S_VID_MIN:
        if ((st = ml_ty_get_count(c, key, val, 1, (uint64_t)1 << 32, &n)) != ML_OK)
            return st;
        *(d->id == S_IMG_MAX   ? &v->image_max_pixels
          : d->id == S_IMG_MIN ? &v->image_min_pixels
          : d->id == S_VID_MAX ? &v->video_max_pixels
                               : &v->video_min_pixels) = n;
        return ML_OK;
    case S_VID_FPS:
        if (!ml_ty_get_real(val, &x) || x <= 0 || x > 1000)
            return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' must be a number above 0, got '%.60s'"), key, val);
        v->video_fps_milli = (uint32_t)(x * 1000 + 0.5);
        return ML_OK;
    case S_VID_MAXLEN:
    case S_IMAGES:
    case S_VIDEOS:
    case S_VIDEO_SECONDS:
        if ((st = ml_ty_get_count(c, key, val, d->id == S_VID_MAXLEN ? 1 : 0, 1u << 16, &n)) != ML_OK)
            return st;
        if (d->id == S_VID_MAXLEN)
            v->video_maxlen = (uint32_t)n;
        else if (d->id == S_IMAGES) {
            v->images_per_sample = (uint32_t)n;
            v->images_set = true;
        } else if (d->id == S_VIDEOS)
            v->videos_per_sample = (uint32_t)n;
        else
            v->video_seconds = (uint32_t)n;
        return ML_OK;
    case S_IMAGE_SIZE:
        if (!parse_size(val, &v->image_width, &v->image_height))
            return ml_ty_failf(c, ML_ERR_INVALID, _("'%s' must be WIDTHxHEIGHT in pixels (1 to 65536), got '%.60s'"),
                               key, val);
        return ML_OK;
    default: return ML_OK;
    }
}
