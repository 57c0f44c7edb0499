/* The logits llama.cpp computes for a token sequence, for benchmarks/llamacpp_anchor.py.
 *
 *     llamacpp_logits MODEL.gguf OUT.f32 N_GPU_LAYERS TOKEN...
 *
 * Loads MODEL (with N_GPU_LAYERS layers on the GPU backend, 99 = all), decodes the
 * tokens at positions 0, 1, ... in one batch with every position's logits requested,
 * and writes them to OUT as float32, row-major [n_tokens, n_vocab]. Prints the vocab
 * size on stdout. Built by scripts/build_llamacpp.sh against the llama.cpp it builds;
 * uses only llama.h's public API. */
#include <stdio.h>
#include <stdlib.h>

#include "llama.h"

static void quiet(enum ggml_log_level level, const char *text, void *user) {
    (void)user;
    if (level == GGML_LOG_LEVEL_ERROR) fputs(text, stderr);
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: %s MODEL.gguf OUT.f32 N_GPU_LAYERS TOKEN...\n", argv[0]);
        return 2;
    }
    const int n_tokens = argc - 4;
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mparams = llama_model_default_params();
    mparams.n_gpu_layers = atoi(argv[3]);
    struct llama_model *model = llama_model_load_from_file(argv[1], mparams);
    if (model == NULL) {
        fprintf(stderr, "cannot load %s\n", argv[1]);
        return 1;
    }
    const int n_vocab = llama_vocab_n_tokens(llama_model_get_vocab(model));
    struct llama_context_params cparams = llama_context_default_params();
    cparams.n_ctx = (uint32_t)(n_tokens < 256 ? 256 : n_tokens);
    cparams.n_batch = cparams.n_ctx;
    cparams.n_ubatch = cparams.n_ctx;
    struct llama_context *ctx = llama_init_from_model(model, cparams);
    if (ctx == NULL) {
        fprintf(stderr, "cannot create a context\n");
        return 1;
    }
    struct llama_batch batch = llama_batch_init(n_tokens, 0, 1);
    for (int i = 0; i < n_tokens; ++i) {
        char *end = NULL;
        long token = strtol(argv[4 + i], &end, 10);
        if (*end != '\0' || token < 0 || token >= n_vocab) {
            fprintf(stderr, "bad token %s (vocab %d)\n", argv[4 + i], n_vocab);
            return 2;
        }
        batch.token[i] = (llama_token)token;
        batch.pos[i] = i;
        batch.n_seq_id[i] = 1;
        batch.seq_id[i][0] = 0;
        batch.logits[i] = 1;
    }
    batch.n_tokens = n_tokens;
    if (llama_decode(ctx, batch) != 0) {
        fprintf(stderr, "llama_decode failed\n");
        return 1;
    }
    FILE *out = fopen(argv[2], "wb");
    if (out == NULL) {
        fprintf(stderr, "cannot write %s\n", argv[2]);
        return 1;
    }
    for (int i = 0; i < n_tokens; ++i) {
        const float *row = llama_get_logits_ith(ctx, i);
        if (row == NULL || fwrite(row, sizeof(float), (size_t)n_vocab, out) != (size_t)n_vocab) {
            fprintf(stderr, "cannot read or write the logits of position %d\n", i);
            fclose(out);
            return 1;
        }
    }
    fclose(out);
    printf("%d\n", n_vocab);
    llama_batch_free(batch);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return 0;
}
