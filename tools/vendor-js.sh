#!/usr/bin/env bash
# Refresh the graph view's vendored Cytoscape.js (graphmem/servers/static/vendor/) from the npm
# registry: `make vendor-js CYTOSCAPE=3.34.4`. The tarball is checked against the registry's
# integrity digest; VENDOR.json records the version, that digest and the file's sha256, which
# tests/test_view.py checks against the committed file.
set -euo pipefail
VERSION="${1:?usage: vendor-js.sh VERSION}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
DEST="$ROOT/graphmem/servers/static/vendor"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
(cd "$TMP" && npm pack --silent "cytoscape@$VERSION" >/dev/null)
INTEGRITY="$(npm view "cytoscape@$VERSION" dist.integrity)"
tar -xzf "$TMP/cytoscape-$VERSION.tgz" -C "$TMP" package/dist/cytoscape.min.js package/LICENSE package/package.json
python3 - "$TMP/cytoscape-$VERSION.tgz" "$INTEGRITY" "$VERSION" "$TMP/package" "$DEST" <<'PY'
import base64, hashlib, json, shutil, sys
from pathlib import Path
tarball, integrity, version, package, dest = sys.argv[1:]
got = "sha512-" + base64.b64encode(hashlib.sha512(Path(tarball).read_bytes()).digest()).decode()
if got != integrity:
    sys.exit(f"cytoscape@{version}: the tarball's digest {got} is not the registry's {integrity}")
shutil.copyfile(Path(package, "dist", "cytoscape.min.js"), Path(dest, "cytoscape.min.js"))
shutil.copyfile(Path(package, "LICENSE"), Path(dest, "cytoscape.LICENSE"))
record = {"cytoscape": {
    "npm": f"cytoscape@{version}", "license": json.loads(Path(package, "package.json").read_text())["license"],
    "license_file": "cytoscape.LICENSE",
    "from": "dist/cytoscape.min.js of the npm tarball", "file": "cytoscape.min.js",
    "tarball_integrity": integrity,
    "sha256": hashlib.sha256(Path(dest, "cytoscape.min.js").read_bytes()).hexdigest()}}
Path(dest, "VENDOR.json").write_text(json.dumps(record, indent=2) + "\n")
print(f"cytoscape@{version} -> {dest}")
PY
