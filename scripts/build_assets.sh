#!/usr/bin/env bash
# Rebuild the bundled JavaScript (service/static/vendor/) from the npm registry: the
# explorer's Cytoscape.js, and Swagger UI and ReDoc for /docs and /redoc.
#
# Users never run this: the files it writes are committed, so `kg serve` works offline
# with no CDN and no build step. Run it only to upgrade a library, then commit the
# result together with service/static/vendor/LICENSES.md (which it regenerates).
#
#   bash scripts/build_assets.sh
#
# Needs node and npm. Versions are pinned here so a rebuild is reproducible.
set -euo pipefail

CYTOSCAPE=3.35.0
FCOSE=2.2.0
COSE_BASE=2.2.0
LAYOUT_BASE=2.0.1
SWAGGER_UI=5.32.0
REDOC=2.5.2

root="$(cd "$(dirname "$0")/.." && pwd)"
dest="$root/service/static/vendor"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cd "$work"
npm init -y >/dev/null
npm install --no-audit --no-fund --ignore-scripts --save-exact \
  "cytoscape@$CYTOSCAPE" "cytoscape-fcose@$FCOSE" "cose-base@$COSE_BASE" "layout-base@$LAYOUT_BASE" \
  "swagger-ui-dist@$SWAGGER_UI" "redoc@$REDOC" >/dev/null

mkdir -p "$dest"
# UMD builds: each registers a browser global (cytoscape, layoutBase, coseBase,
# cytoscapeFcose), loaded in this order by the page.
cp node_modules/cytoscape/dist/cytoscape.min.js "$dest/cytoscape.min.js"
cp node_modules/layout-base/layout-base.js "$dest/layout-base.js"
cp node_modules/cose-base/cose-base.js "$dest/cose-base.js"
cp node_modules/cytoscape-fcose/cytoscape-fcose.js "$dest/cytoscape-fcose.js"
# /docs and /redoc (service/app.py); the source maps are left out to keep the checkout small.
cp node_modules/swagger-ui-dist/swagger-ui-bundle.js "$dest/swagger-ui-bundle.js"
cp node_modules/swagger-ui-dist/swagger-ui.css "$dest/swagger-ui.css"
cp node_modules/redoc/bundles/redoc.standalone.js "$dest/redoc.standalone.js"
# The bundles end with a sourceMappingURL comment; without the map it is a 404 in devtools.
# Only whole last lines are touched: the bundles hold that text inside code too.
sed -i '$ { /^\/\/# sourceMappingURL=[^ ]*$/d }' "$dest/swagger-ui-bundle.js" "$dest/redoc.standalone.js"
sed -i '$ { /^\/\*# sourceMappingURL=[^ ]*\*\/$/d }' "$dest/swagger-ui.css"

{
  echo "# Bundled JavaScript libraries"
  echo
  echo "Copied from the npm registry by \`scripts/build_assets.sh\`; do not edit by hand."
  echo
  echo "| file | package | version | licence | homepage |"
  echo "| --- | --- | --- | --- | --- |"
  for spec in "cytoscape.min.js cytoscape" "layout-base.js layout-base" \
              "cose-base.js cose-base" "cytoscape-fcose.js cytoscape-fcose" \
              "swagger-ui-bundle.js,swagger-ui.css swagger-ui-dist" \
              "redoc.standalone.js redoc"; do
    set -- $spec
    node -e '
      const p = require(process.argv[2] + "/package.json");
      console.log(`| ${process.argv[1]} | ${p.name} | ${p.version} | ${p.license} | ${p.homepage || ""} |`);
    ' "$1" "$work/node_modules/$2"
  done
  echo
  echo "## Licence texts"
  for pkg in cytoscape layout-base cose-base cytoscape-fcose swagger-ui-dist redoc; do
    echo
    echo "### $pkg"
    echo
    echo '```'
    cat "node_modules/$pkg"/LICENSE* 2>/dev/null || echo "(no licence file shipped; licence per package.json)"
    echo '```'
  done
} > "$dest/LICENSES.md"

echo "wrote $(ls "$dest" | wc -l) files to $dest"
