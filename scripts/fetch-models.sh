#!/usr/bin/env bash
# Fetch the test/default models into $TERN_MODELS (default
# ~/.cache/tern/models): the script lives in the tern-llm package
# (native/fetch-models.sh), which the CLI embeds.
#   scripts/fetch-models.sh [qwen|smollm2|all]
exec bash "$(dirname "$0")/../native/fetch-models.sh" "$@"
