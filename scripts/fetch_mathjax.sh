#!/usr/bin/env bash
# Vendor MathJax 3 for the book, so that the built site loads no script from a CDN.
#
# Downloads the npm tarball of mathjax@$VERSION (or takes MATHJAX_TARBALL=/path/to/mathjax-X.tgz),
# checks its SHA-256, and copies its es5/ tree to .cache/book-extra/_static/mathjax/.
# _config.yml lists .cache/book-extra in html_extra_path, so Sphinx copies it verbatim to
# _build/html/_static/mathjax/ and `mathjax_path: mathjax/tex-chtml.js` resolves there.
#
# Why not the source folder _static/mathjax/: jupyter-book adds EVERY *.js below _static/ to
# html_js_files, i.e. it would load all ~70 MathJax components on every page. html_extra_path is
# copied but not scanned.
#
# Run by `make setup` (so that `make book` needs no network afterwards) and again, as a no-op, by
# scripts/build_book.sh. Idempotent: exits at once when the pinned version is already in place.
# Needs npm and its registry the first time (Debian: apt-get install npm), or MATHJAX_TARBALL.
set -euo pipefail

VERSION="3.2.2"
SHA256="1b9c0a1c44df864e915690558e72adb9cc5203360daefd385084ced3b6c64c09"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
EXTRA="$ROOT/.cache/book-extra"
DEST="$EXTRA/_static/mathjax"
STAMP="$ROOT/.cache/book-extra.mathjax-version"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$VERSION" && -f "$DEST/tex-chtml.js" ]]; then
  echo "fetch_mathjax: MathJax $VERSION already in $DEST"
  exit 0
fi

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

if [[ -n "${MATHJAX_TARBALL:-}" ]]; then
  cp "$MATHJAX_TARBALL" "$TMP/mathjax.tgz"
else
  if ! command -v npm >/dev/null 2>&1; then
    echo "fetch_mathjax: npm not found. Install it (Debian: apt-get install npm) or set" \
      "MATHJAX_TARBALL to a local mathjax-$VERSION.tgz" >&2
    exit 1
  fi
  (cd "$TMP" && npm pack "mathjax@$VERSION" --silent --no-fund --no-audit >/dev/null 2>"$TMP/npm.log") || {
    cat "$TMP/npm.log" >&2
    echo "fetch_mathjax: 'npm pack mathjax@$VERSION' failed (registry unreachable?); run it where npm's" \
      "registry is reachable (make setup), or set MATHJAX_TARBALL to a local mathjax-$VERSION.tgz" >&2
    exit 1
  }
  mv "$TMP/mathjax-$VERSION.tgz" "$TMP/mathjax.tgz"
fi

echo "$SHA256  $TMP/mathjax.tgz" | sha256sum --check --quiet - || {
  echo "fetch_mathjax: checksum mismatch for mathjax $VERSION" >&2
  exit 1
}
tar -xzf "$TMP/mathjax.tgz" -C "$TMP"
test -f "$TMP/package/es5/tex-chtml.js"

mkdir -p "$EXTRA/_static"
rm -rf "$DEST.partial"
cp -r "$TMP/package/es5" "$DEST.partial"
cp "$TMP/package/LICENSE" "$DEST.partial/LICENSE"
rm -rf "$DEST"
mv "$DEST.partial" "$DEST"
printf '%s\n' "$VERSION" > "$STAMP"
echo "fetch_mathjax: MathJax $VERSION installed in $DEST ($(du -sh "$DEST" | cut -f1))"
