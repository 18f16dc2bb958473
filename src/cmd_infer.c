/*
 * cmd_infer.c - memledger infer: the inference and serving ledger, before launch.
 */
#include "cli.h"
#include "io.h"

#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "memledger/catalog.h"
#include "memledger/gpu.h"
#include "memledger/infer.h"
#include "memledger/inventory.h"
#include "memledger/ledger.h"
#include "memledger/ledger_svg.h"
#include "memledger/report.h"
#include "i18n.h"
#include "term.h"

/* cmd_infer_usage: generated from docs/cli/infer.md (tools/gen_cli_docs.c). */

enum { I_GPU = 300, I_NGPU, I_SERVE, I_JSON, I_MD, I_CHECK, I_SVG, I_FORCE };

int cmd_infer(int argc, char **argv)
{
    /* I_SERVE: the serving options, parsed by ml_infer_option (src/infer_opts.c). */
    static const struct option longopts[] = {
        {"gpu", required_argument, NULL, I_GPU}, {"num-gpus", required_argument, NULL, I_NGPU},
        {"engine", required_argument, NULL, I_SERVE}, {"dtype", required_argument, NULL, I_SERVE},
        {"quant", required_argument, NULL, I_SERVE}, {"group-size", required_argument, NULL, I_SERVE},
        {"double-quant", no_argument, NULL, I_SERVE}, {"kv-dtype", required_argument, NULL, I_SERVE},
        {"quant-bits", required_argument, NULL, I_SERVE}, {"dequantize", no_argument, NULL, I_SERVE},
        {"allow-long-max-model-len", no_argument, NULL, I_SERVE},
        {"batch", required_argument, NULL, I_SERVE}, {"context", required_argument, NULL, I_SERVE},
        {"prompt", required_argument, NULL, I_SERVE},
        {"static-cache", no_argument, NULL, I_SERVE}, {"attn", required_argument, NULL, I_SERVE},
        {"tp", required_argument, NULL, I_SERVE}, {"pp", required_argument, NULL, I_SERVE},
        {"gpu-memory-utilization", required_argument, NULL, I_SERVE},
        {"max-model-len", required_argument, NULL, I_SERVE}, {"max-num-seqs", required_argument, NULL, I_SERVE},
        {"max-num-batched-tokens", required_argument, NULL, I_SERVE}, {"offline", no_argument, NULL, I_SERVE},
        {"enforce-eager", no_argument, NULL, I_SERVE}, {"mem-fraction-static", required_argument, NULL, I_SERVE},
        {"vllm-version", required_argument, NULL, I_SERVE}, {"transformers-version", required_argument, NULL, I_SERVE},
        {"json", no_argument, NULL, I_JSON}, {"markdown", no_argument, NULL, I_MD}, {"check", no_argument, NULL, I_CHECK},
        {"svg", required_argument, NULL, I_SVG}, {"force", no_argument, NULL, I_FORCE},
        {"wide", no_argument, NULL, ML_OPT_WIDE},
        {"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0},
    };
    struct ml_infer s;
    ml_infer_defaults(&s);
    const char *gpu = NULL;
    uint64_t ngpu = 0;
    bool json = false, md = false, check = false, force = false, wide = false;
    const char *svg = NULL;
    int c, li = 0;
    optind = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "h", longopts, &li)) != -1) {
        switch (c) {
        case I_GPU: gpu = optarg; break;
        case I_NGPU:
            if (!ml_opt_u64("infer", "--num-gpus", optarg, 1, 4096, &ngpu))
                return ML_EXIT_USAGE;
            break;
        case I_SERVE:
            if (ml_infer_option("infer", longopts[li].name, optarg, &s) != ML_INFER_OPT_OK)
                return ML_EXIT_USAGE;
            break;
        case I_JSON: json = true; break;
        case I_MD: md = true; break;
        case I_CHECK: check = true; break;
        case I_SVG: svg = optarg; break;
        case I_FORCE: force = true; break;
        case ML_OPT_WIDE: wide = true; break;
        case 'h':
            fputs(_(cmd_infer_usage), stdout);
            return ML_EXIT_OK;
        default:
            return ml_usage_error("infer", _("unknown or incomplete option '%s'"), argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return ml_usage_error("infer", "%s", _("missing MODEL"));
    if (optind + 1 < argc)
        return ml_usage_error("infer", _("unexpected argument '%s'"), argv[optind + 1]);
    if (json && md)
        return ml_usage_error("infer", "%s", _("--json and --markdown exclude each other"));
    if (!gpu)
        return ml_usage_error("infer", "%s", _("--gpu is needed (a card such as h100, or a size such as 24G)"));

    if (svg && !ml_can_write(svg, force))
        return ML_EXIT_USAGE;
    static struct ml_model_ref m;
    static struct ml_inventory inv;
    struct ml_cluster cl;
    if (!ml_resolve_serving(argv[optind], gpu, &m, &cl, &inv))
        return ML_EXIT_USAGE;
    /* --quant awq/gptq on a built-in model whose quantized checkpoint has its own shapes (Qwen
     * padded Qwen2.5-72B's intermediate_size): that checkpoint's config (lib/model/catalog.c). */
    const struct ml_catalog_entry *qv = m.catalog_params && m.arch.wq.method == ML_WQ_NONE
        ? ml_catalog_quant_variant(ml_catalog_find(m.name), s.quant == ML_QUANT_AWQ ? ML_NAME_QUANT_AWQ
                                   : s.quant == ML_QUANT_GPTQ ? ML_NAME_QUANT_GPTQ : ML_NAME_QUANT_NONE, s.quant_bits)
        : NULL;
    if (qv) {
        ml_stderr_printf(_("memledger: note: --quant %s: the config of %s, the quantized checkpoint of %s\n"),
                         ml_quant_name(s.quant), qv->hub_id, m.name);
        if (!ml_resolve_serving(qv->hub_id, gpu, &m, &cl, &inv))
            return ML_EXIT_USAGE;
    }
    cl.gpus_per_node = ngpu ? (uint32_t)ngpu : s.tp * s.pp;
    cl.nodes = 1;
    static struct ml_ledger l;
    struct ml_serve sv;
    struct ml_diag d;
    ml_diag_init(&d);
    if (ml_ledger_infer(&m.arch, &inv, &s, &cl, &l, &sv, &d) != ML_OK)
        return ml_usage_error("infer", "%s", d.msg);

    struct ml_buf out;
    ml_buf_init(&out, 0);
    enum ml_status st = ML_OK;
    if (json)
        st = ml_render_infer_json(&out, &m, &s, &cl, &l, &sv);
    else if (md)
        ml_render_infer_markdown(&out, &m, &s, &cl, &l, &sv);
    else {
        struct ml_layout lay;
        ml_term_layout(wide, &lay);
        ml_render_infer_text(&out, &m, &s, &cl, &l, &sv, &lay);
    }
    if (st == ML_OK)
        st = ml_write_stdout(&out);
    ml_buf_reset(&out);
    if (st == ML_OK && svg)
        st = ml_write_picture(svg, ml_render_infer_svg(&out, &m, &s, &cl, &l, &sv), &out, force);
    ml_buf_release(&out);
    if (st != ML_OK)
        return ML_EXIT_USAGE;
    return check && !l.fits ? ML_EXIT_NEGATIVE : ML_EXIT_OK;
}
