#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Installs the build into $VOLSEG_WORK/prefix and builds examples/insitu-heat
# against it as simulations do: with CMake (find_package(volseg),
# volseg::insitu), with its Makefile (pkg-config volseg-insitu), and with CMake
# beside the ParaView SDK's VTK (catalyst-consumer/). Each program runs on 2
# ranks (the CMake one also on 1 and 3) and must write the same masks, and
# must name the parallel netCDF itself and load it ahead of the serial one
# (docs/dependencies.md: the netCDF pitfalls).
# Environment (set by ctest): VOLSEG_BUILD, VOLSEG_EXAMPLE, VOLSEG_WORK,
# VOLSEG_LIBDIR, CMAKE, CMAKE_GENERATOR, MPIEXEC, VOLSEG_WITH_PARAVIEW (ON/OFF).
set -euo pipefail

fail() { echo "test_install: $*" >&2; exit 1; }
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

work=$VOLSEG_WORK
prefix=$work/prefix
libdir=$prefix/$VOLSEG_LIBDIR
rm -rf "$work"
mkdir -p "$work"

echo "== cmake --install into $prefix"
"$CMAKE" --install "$VOLSEG_BUILD" --prefix "$prefix" > "$work/install.log" || { cat "$work/install.log"; fail "install failed"; }
for f in "$libdir/cmake/volseg/volsegConfig.cmake" "$libdir/cmake/volseg/volsegConfigVersion.cmake" \
         "$libdir/cmake/volseg/volsegTargets.cmake" "$libdir/cmake/volseg/netcdf/netCDFConfig.cmake" \
         "$libdir/pkgconfig/volseg-insitu.pc" "$libdir/libvolseg_insitu.so" \
         "$prefix/include/volseg/insitu/volseg_insitu.h" "$prefix/include/volseg/insitu/insitu.hpp" \
         "$prefix/include/volseg/io/types.hpp" "$prefix/bin/volseg" "$prefix/share/volseg/trace_plots.py"; do
  [[ -e $f ]] || fail "not installed: $f"
done
# The installed tree must not lean on the source or build folders.
source_root=$(cd "$VOLSEG_EXAMPLE/../.." && pwd)
if grep -rlF -e "$source_root" -e "$VOLSEG_BUILD" "$libdir/cmake/volseg" "$libdir/pkgconfig"; then
  fail "installed package files name the source or build folder (above)"
fi
runpath=$(readelf -d "$libdir/libvolseg_insitu.so" | grep -E 'RUNPATH|RPATH' || true)
[[ $runpath != *"$VOLSEG_BUILD"* && $runpath != *"$source_root"* ]] || fail "build run path installed: $runpath"

# The command line loads no rendering stack: VTK, Qt and ParaView are
# volseg-render's alone, which `volseg render` hands over to from libexec.
if ldd "$prefix/bin/volseg" | grep -iE 'vtk|qt5|paraview|icet'; then
  fail "bin/volseg links a VTK, Qt or ParaView library (above)"
fi
if [[ ${VOLSEG_WITH_PARAVIEW:-ON} == ON ]]; then
  [[ -x $prefix/libexec/volseg/volseg-render ]] || fail "not installed: $prefix/libexec/volseg/volseg-render"
  "$prefix/bin/volseg" render --help > "$work/render-help.txt" 2>&1 || { cat "$work/render-help.txt"; fail "volseg render --help failed"; }
  grep -q -- "--colormap" "$work/render-help.txt" || { cat "$work/render-help.txt"; fail "volseg render --help is not render's"; }
else
  if "$prefix/bin/volseg" render in.nhdr --out r.png > "$work/render.txt" 2>&1; then fail "volseg render ran without ParaView"; fi
  grep -q "built without ParaView" "$work/render.txt" || { cat "$work/render.txt"; fail "volseg render: no clear refusal"; }
fi

# Pitfall 1 from the user's side: Debian's own netCDF config (serial headers)
# must be refused with a message naming the wrapper, not accepted.
if env -u CMAKE_PREFIX_PATH "$CMAKE" -S "$VOLSEG_EXAMPLE" -B "$work/serial-netcdf-build" -G "$CMAKE_GENERATOR" \
     -Dvolseg_DIR="$libdir/cmake/volseg" -DnetCDF_DIR=/usr/lib/x86_64-linux-gnu/cmake/netCDF_pnetcdf \
     > "$work/serial-netcdf.log" 2>&1; then
  fail "find_package(volseg) accepted Debian's netCDF config (serial headers)"
fi
grep -q "needs the parallel netCDF-C" "$work/serial-netcdf.log" ||
  { cat "$work/serial-netcdf.log"; fail "no clear message for a serial netCDF config"; }

# The C++ header stands alone on the installed tree (it includes volseg/io/...).
echo '#include "volseg/insitu/insitu.hpp"' |
  c++ -std=c++20 -fsyntax-only $(PKG_CONFIG_PATH="$libdir/pkgconfig" pkg-config --cflags volseg-insitu) -x c++ - ||
  fail "volseg/insitu/insitu.hpp does not compile from $prefix/include"

# A program's NEEDED entries and load order: the parallel netCDF must be
# linked into it directly and come before VTK's serial libnetcdf.so.19.
check_netcdf() {
  local exe=$1
  readelf -d "$exe" | grep NEEDED | grep -q 'libnetcdf_pnetcdf' || fail "$exe does not link libnetcdf_pnetcdf directly"
  readelf -d "$exe" | grep NEEDED | grep -q 'libvolseg_insitu' || fail "$exe does not link libvolseg_insitu"
  local order
  order=$(ldd "$exe" | awk '/libnetcdf/ {print $1}')
  [[ -n $order ]] || fail "ldd $exe resolves no netCDF library"
  [[ $(head -n1 <<< "$order") == libnetcdf_pnetcdf* ]] || fail "$exe loads $(head -n1 <<< "$order") first: $order"
  if ldd "$exe" | grep -q 'not found'; then fail "$exe has unresolved libraries: $(ldd "$exe" | grep 'not found')"; fi
  local loaded
  loaded=$(ldd "$exe" | awk '/libvolseg_insitu/ {print $3}')
  [[ -n $loaded && $(readlink -f "$loaded") == "$(readlink -f "$libdir")"/* ]] ||
    fail "$exe loads libvolseg_insitu from '$loaded', not from $libdir"
}

run_example() {
  local exe=$1 out=$2 ranks=${3:-2}
  "$MPIEXEC" -n "$ranks" "$exe" "$out" 6 > "$out.log" 2>&1 || { cat "$out.log"; fail "$exe on $ranks ranks failed"; }
  cat "$out.log"
  for step in 0 2 4 6; do
    [[ -s $out/$(printf 'mask_%06d.nhdr' "$step") ]] || fail "no mask for step $step in $out"
  done
  [[ $(wc -l < "$out/stats.csv") -ge 5 ]] || fail "$out/stats.csv has fewer than 4 steps"
}

echo "== CMake: find_package(volseg) from $libdir/cmake/volseg"
env -u CMAKE_PREFIX_PATH "$CMAKE" -S "$VOLSEG_EXAMPLE" -B "$work/cmake-build" -G "$CMAKE_GENERATOR" \
  -DCMAKE_BUILD_TYPE=Release -Dvolseg_DIR="$libdir/cmake/volseg" > "$work/cmake-configure.log" 2>&1 ||
  { cat "$work/cmake-configure.log"; fail "configuring the example failed"; }
"$CMAKE" --build "$work/cmake-build" > "$work/cmake-build.log" 2>&1 ||
  { cat "$work/cmake-build.log"; fail "building the example failed"; }
check_netcdf "$work/cmake-build/insitu-heat"
run_example "$work/cmake-build/insitu-heat" "$work/out-cmake"
# On 1 rank (no ghost planes) and 3 (one rank with two): the same masks below.
run_example "$work/cmake-build/insitu-heat" "$work/out-cmake-np1" 1
run_example "$work/cmake-build/insitu-heat" "$work/out-cmake-np3" 3

echo "== Makefile: pkg-config volseg-insitu from $libdir/pkgconfig"
mkdir -p "$work/make-build"
PKG_CONFIG_PATH="$libdir/pkgconfig" make -C "$work/make-build" -f "$VOLSEG_EXAMPLE/Makefile" > "$work/make.log" 2>&1 ||
  { cat "$work/make.log"; fail "make failed"; }
cat "$work/make.log"
check_netcdf "$work/make-build/insitu-heat"
run_example "$work/make-build/insitu-heat" "$work/out-make"

others=(out-make)
if [[ ${VOLSEG_WITH_PARAVIEW:-ON} == ON ]]; then
others+=(out-catalyst)
echo "== CMake: a program that links VTK's netCDF module beside volseg::insitu"
env -u CMAKE_PREFIX_PATH "$CMAKE" -S "$here/catalyst-consumer" -B "$work/catalyst-build" -G "$CMAKE_GENERATOR" \
  -DCMAKE_BUILD_TYPE=Release -Dvolseg_DIR="$libdir/cmake/volseg" -DEXAMPLE_SOURCE="$VOLSEG_EXAMPLE/insitu_heat.c" \
  -DPython3_EXECUTABLE=/usr/bin/python3 > "$work/catalyst-configure.log" 2>&1 ||
  { cat "$work/catalyst-configure.log"; fail "configuring the VTK consumer failed"; }
"$CMAKE" --build "$work/catalyst-build" > "$work/catalyst-build.log" 2>&1 ||
  { cat "$work/catalyst-build.log"; fail "building the VTK consumer failed"; }
check_netcdf "$work/catalyst-build/insitu-heat-catalyst"
run_example "$work/catalyst-build/insitu-heat-catalyst" "$work/out-catalyst"
fi

# Step 0 is the initial ball (u = 1 where dx^2+dy^2+dz^2 <= 8^2 around the
# centre of the 32^3 grid, else 0): its mask, recomputed here, checks that
# the slabs and ghost planes reached the hook where the example says.
/usr/bin/python3 - "$work/out-cmake/mask_000000.raw" <<'PY' || fail "the step-0 mask is not the initial ball"
import sys
data = open(sys.argv[1], "rb").read()
n = 32
expected = bytes(1 if (i - 16) ** 2 + (j - 16) ** 2 + (k - 16) ** 2 <= 64 else 0
                 for k in range(n) for j in range(n) for i in range(n))
if data != expected:
    sys.exit(f"{sys.argv[1]}: {len(data)} bytes, {sum(a != b for a, b in zip(data, expected))} differ from the ball")
PY
# Every build and rank count ran the same simulation: the same masks, byte
# for byte (the ghost planes carried the neighbours' values).
for f in "$work"/out-cmake/mask_*.raw; do
  for other in "${others[@]}" out-cmake-np1 out-cmake-np3; do
    cmp -s "$f" "$work/$other/$(basename "$f")" || fail "$(basename "$f") differs between out-cmake and $other"
  done
done

# The Python package, where cmake --install put it, from outside the build:
# it imports, its in-situ extension loads the installed libvolseg_insitu, and
# a hook writes a mask on 2 ranks.
site=$(find "$prefix/lib" -maxdepth 3 -type d -path "*python3*/dist-packages" | head -n 1)
if [[ -n $site && -d $site/volseg ]]; then
  echo "== import volseg from $site"
  insitu_ext=$(ls "$site"/volseg/_insitu*.so)
  loaded=$(ldd "$insitu_ext" | awk '/libvolseg_insitu/ {print $3}')
  [[ $loaded == "$libdir"/* ]] || fail "the installed _insitu loads $loaded, not the installed library"
  (cd "$work" && PYTHONPATH=$site "$MPIEXEC" -n 2 /usr/bin/python3 -c "
import numpy as np, volseg, volseg.insitu
from mpi4py import MPI
c = MPI.COMM_WORLD
z0 = 4 * c.rank
with volseg.insitu.Hook(c, '--lo 1 --hi 2 --out py_mask_%d.nhdr --force') as h:
    h.publish(step=0, time=0, global_dims=(8, 4, 4), box=((z0, 0, 0), (4, 4, 4)),
              values=np.full((4, 4, 4), 1.5 if c.rank == 0 else 3, np.float32))
") > "$work/python.log" 2>&1 || { cat "$work/python.log"; fail "the installed Python package failed"; }
  /usr/bin/python3 -c "import sys; sys.exit(open(sys.argv[1], 'rb').read() != bytes([1] * 64 + [0] * 64))" \
    "$work/py_mask_0.raw" || fail "the installed package's hook wrote a wrong mask"
elif [[ -n $(ls "$VOLSEG_BUILD"/python/volseg/_volseg*.so 2> /dev/null) ]]; then
  fail "the Python package was built but not installed under $prefix/lib"
fi
echo "test_install: ok"
