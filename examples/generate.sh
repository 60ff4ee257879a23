#!/bin/sh
# Text generation from a decoder (SPEC.md section 5b), the shell way: the
# prompt's token ids in, each new id printed the moment the model produces
# it (output_ids.txt is a streaming output: `cat` waits for the next id
# and ends after the last).
#   usage: examples/generate.sh MOUNT MODEL "ID ID ..." [MAX_TOKENS]
# Token ids are the interface: put a tokenizer in front and behind, e.g.
#   ids=$(python3 -c 'import tokenizers, sys; ...encode(sys.argv[1]).ids' "$text")
#   examples/generate.sh mnt gpt2 "$ids" 32 | python3 -c '...decode...'
set -e
mnt=$1 model=$2 prompt=$3 max=${4:-16}
req="$mnt/$model/requests/gen$$"
mkdir "$req"
trap 'rmdir "$req"' EXIT
echo "$max" > "$req/.max_tokens"             # parameters first (dot files)...
echo "$prompt" > "$req/input_ids.txt"        # ...then the prompt starts it
cat "$req/output_ids.txt"                    # one id a line, as produced
