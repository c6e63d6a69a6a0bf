#!/bin/sh
# Builds a DPA program the way DOCA 3.x's sample scripts do: the attributes YAML turned into a
# blob, then dpacc with DOCA's flags. Arguments:
#   $1 build dir  $2 device source  $3 sample name  $4 program (archive) name
#   $5 -mcpu list  $6 DOCA lib dir  $7 attributes YAML  $8 DOCA tools dir  $9 DOCA include dir
set -e

BUILD_DIR="$1"
DEVICE_SRC="$2"
SAMPLE="$3"
PROGRAM="$4"
MCPU="$5"
DOCA_LIBDIR="$6"
ATTRIBUTES="$7"
TOOLS="$8"
INCLUDE="$9"

OUT_DIR="$BUILD_DIR/$SAMPLE/device/build_dpacc"
rm -rf "$OUT_DIR"
mkdir -p "$OUT_DIR"

BLOB="$OUT_DIR/${SAMPLE}_attributes.blob"
"$TOOLS/dpa-app-attributes2blob" "$ATTRIBUTES" "$BLOB"

"$TOOLS/dpacc" "$DEVICE_SRC" -o "$OUT_DIR/$PROGRAM.a" \
	-mcpu="$MCPU" \
	-hostcc=gcc \
	-hostcc-options="-Wno-deprecated-declarations -Werror -Wall -Wextra -DFLEXIO_ALLOW_EXPERIMENTAL_API" \
	--devicecc-options="-Wno-deprecated-declarations -Werror -Wall -Wextra -DFLEXIO_DEV_ALLOW_EXPERIMENTAL_API -O2" \
	--app-name="dpa_sample_app" \
	-device-libs="-L$DOCA_LIBDIR -ldoca_dpa_dev -ldoca_dpa_dev_comm -ldoca_dpa_dev_verbs" \
	-flto \
	-disable-asm-checks \
	--keep-dir="$OUT_DIR/keep" \
	-I"$INCLUDE" \
	--dpa-proc-attr="$BLOB"

# meson's custom target names the archive in the build tree.
cp "$OUT_DIR/$PROGRAM.a" "$BUILD_DIR/$PROGRAM.a"
