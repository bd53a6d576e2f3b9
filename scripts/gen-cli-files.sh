#!/usr/bin/env bash
# Man pages and shell completions of coords, coords-relay and coords-push-gateway, generated from the command
# definitions of the built executables (swift-argument-parser knows every command and option).
# Usage: scripts/gen-cli-files.sh BIN_DIR OUT_DIR   (make man; make install)
#   OUT_DIR/man/coords.1, coords-relay.1, coords-push-gateway.1
#   OUT_DIR/completions/bash/<tool>, zsh/_<tool>, fish/<tool>.fish
set -euo pipefail
bin=${1:?usage: gen-cli-files.sh BIN_DIR OUT_DIR}
out=${2:?usage: gen-cli-files.sh BIN_DIR OUT_DIR}
mkdir -p "$out/man" "$out/completions/bash" "$out/completions/zsh" "$out/completions/fish"
for tool in coords coords-relay coords-push-gateway; do
    [ -x "$bin/$tool" ] || { echo "gen-cli-files: $bin/$tool is not built" >&2; exit 1; }
    python3 "$(dirname "$0")/gen-man.py" "$bin/$tool" "$out/man/$tool.1"
    "$bin/$tool" --generate-completion-script bash > "$out/completions/bash/$tool"
    "$bin/$tool" --generate-completion-script zsh > "$out/completions/zsh/_$tool"
    "$bin/$tool" --generate-completion-script fish > "$out/completions/fish/$tool.fish"
done
echo "gen-cli-files: man pages and bash/zsh/fish completions in $out"
