"""Structure factors: the HKL reader and F(h,k,l) lookups (spec §2.1, §5.7).

Conventions and units:

* Miller indices h, k, l are dimensionless. Table nodes sit at integer (h, k, l); the simulator's
  fractional indices come from spec §5.6.
* F is a structure-factor *amplitude* in electrons; the simulator only ever uses F**2.
* :class:`HKLTable` is a dense float64 NumPy box ``[h_min..h_max] x [k_min..k_max] x [l_min..l_max]``
  indexed ``values[h - h_min, k - k_min, l - l_min]``. Entries the file does not list hold ``default_F``
  (which is 0 unless ``-default_F`` is given, spec §2.1).
* :class:`StructureFactors` holds that box as a torch tensor on one device/dtype and answers the two
  lookups of spec §5.7: the nearest-node rule (interpolation off) and the tricubic Lagrange
  interpolation (interpolation on), plus the edge guard deciding where the latter is allowed.
  All lookups are pure, batched tensor functions: inputs of any broadcastable shape ``(*)``, results of
  that shape, no Python loops over points, differentiable in the fractional indices and the F values.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from detsim.fileio import bounded_read, c_numbers
from detsim.host import memory

__all__ = ["HKLError", "HKLTable", "StructureFactors", "read_hkl"]

_INT_LIMIT = 2**31  # nanoBragg stores indices in C ints; |index| must stay below this
_SNIPPET_CHARS = 60

# four numbers as fscanf's %lg reads them, between C spaces (\s in ASCII mode)
_RECORD = re.compile(r"\s*" + r"\s+".join([f"({c_numbers.NUMBER})"] * 4) + r"\s*", re.ASCII)

# Denominators of the four 4-point Lagrange terms, prod_{j != i} (x_i - x_j), for unit-spaced nodes
# x_0..x_3 = f-1, f, f+1, f+2. They are small integers, so they are exact in any float dtype and equal
# to what the node differences give when evaluated in floating point.
_LAGRANGE_DENOMINATORS = (-6.0, 2.0, -2.0, 6.0)


class HKLError(ValueError):
    """A malformed or unreadable HKL file; the one-line message names the file and the line."""


@dataclass(frozen=True, eq=False)
class HKLTable:
    """Dense F table over the index box [h_min..h_max] x [k_min..k_max] x [l_min..l_max].

    Attributes:
        h_min: Smallest h in the box.
        k_min: Smallest k in the box.
        l_min: Smallest l in the box.
        values: Read-only float64 array of shape (h_range, k_range, l_range) with
            ``values[h - h_min, k - k_min, l - l_min] = F(h, k, l)``; unlisted entries hold the fill value.
        count: Number of records read, duplicates included (nanoBragg's ``hkls``).
        source: The file path, for messages.
    """

    h_min: int
    k_min: int
    l_min: int
    values: np.ndarray
    count: int
    source: str

    @property
    def h_max(self) -> int:
        """Largest h in the box."""
        return self.h_min + self.values.shape[0] - 1

    @property
    def k_max(self) -> int:
        """Largest k in the box."""
        return self.k_min + self.values.shape[1] - 1

    @property
    def l_max(self) -> int:
        """Largest l in the box."""
        return self.l_min + self.values.shape[2] - 1


def _snippet(line: str) -> str:
    text = line.strip()
    if len(text) > _SNIPPET_CHARS:
        text = text[: _SNIPPET_CHARS - 3] + "..."
    return repr(text)


def _checked_block(source: str, fields: list[str], line_numbers: list[int]) -> np.ndarray:
    """(N, 4) float64 (h, k, l, F) of records given as text, 4 fields each; raises HKLError at the first bad one."""
    try:
        data = np.array(fields, dtype=np.float64)  # plain decimals: rounded as C rounds them
    except ValueError:  # a hex float or nan(...), which only C's grammar reads
        data = np.array([c_numbers.number_value(field) for field in fields], dtype=np.float64)
    data = data.reshape(-1, 4)
    hkl, amplitudes = data[:, :3], data[:, 3]
    bad_index = ~(np.isfinite(hkl) & (np.floor(hkl) == hkl) & (np.abs(hkl) < _INT_LIMIT))
    bad_f = ~np.isfinite(amplitudes)
    bad_rows = np.flatnonzero(bad_index.any(axis=1) | bad_f)
    if bad_rows.size:
        row = int(bad_rows[0])
        where = f"{source} line {line_numbers[row]}"
        for axis, name in enumerate("hkl"):
            if bad_index[row, axis]:
                raise HKLError(f"{where}: {name} = {fields[4 * row + axis]} is not an integer index")
        raise HKLError(f"{where}: F = {fields[4 * row + 3]} is not finite")
    return data


def _read_records(source: str) -> np.ndarray:
    """The (h, k, l, F) records of an HKL file, shape (N, 4); raises HKLError naming the file and line.

    Read line by line (a line longer than :data:`detsim.fileio.bounded_read.MAX_LINE_BYTES` is an error) and converted in
    blocks, keeping :data:`HKL_BYTES_PER_RECORD` per record, which may not exceed the memory available.
    """
    available = memory.available_bytes(torch.device("cpu"))
    blocks: list[np.ndarray] = []
    fields: list[str] = []
    line_numbers: list[int] = []
    count = last = 0
    with bounded_read.open_regular(source, "HKL file", HKLError) as handle:
        for last, raw, _ in bounded_read.read_lines(handle, source, "HKL file", HKLError):
            line = raw.decode("utf-8", errors="replace").removeprefix("\ufeff" if last == 1 else "")
            if not line.strip(c_numbers.C_SPACES):
                continue
            match = _RECORD.fullmatch(line)
            if match is None:
                raise HKLError(f"{source} line {last}: expected 'h k l F', got {_snippet(line)}")
            fields.extend(match.groups())
            line_numbers.append(last)
            if len(line_numbers) == _BLOCK_RECORDS:
                blocks.append(_checked_block(source, fields, line_numbers))
                count, fields, line_numbers = count + len(line_numbers), [], []
                if count * HKL_BYTES_PER_RECORD > available:
                    raise HKLError(f"{source}: {count} records by line {last} already need "
                                   f"{memory.gib(count * HKL_BYTES_PER_RECORD)} of memory to read, more than the "
                                   f"{memory.gib(available)} available")
    if line_numbers:
        blocks.append(_checked_block(source, fields, line_numbers))
    if not blocks:
        raise HKLError(f"{source} line {max(last, 1)}: no 'h k l F' records in file")
    return np.concatenate(blocks)


# What reading keeps per record at its peak: the blocks and their concatenation (4 float64 each), then the
# int64 indices and the sort that finds the last duplicate (linear index, its order, the kept positions).
HKL_BYTES_PER_RECORD = 2 * 4 * 8 + 3 * 8 + 4 * 8
_BLOCK_RECORDS = 1 << 16  # records converted at once: their text is kept until then


HKL_BYTES_PER_ENTRY = 3 * 8  # the float64 table, its copy on the device, and a spare for its lookups


def read_hkl(path: str | os.PathLike, default_F: float = 0.0) -> HKLTable:
    """Read an ``h k l F`` text file into a dense table (spec §2.1).

    Each non-blank line must hold exactly four whitespace-separated numbers ``h k l F``; blank lines
    are skipped. The index box spans the minimum to maximum h, k and l over all records. In-box
    entries that no record lists are ``default_F`` when it is non-zero and 0 otherwise (the same
    number either way, spelled out because nanoBragg documents it so). When an index triple appears
    more than once, the last record wins.

    This is stricter than nanoBragg, which silently stops at the first token it cannot read: here any
    line that is not four numbers (in C's grammar, :mod:`detsim.fileio.c_numbers`, as nanoBragg's ``fscanf``
    reads them) is an error. The file must be a regular file; it is read line by line, a line longer than
    :data:`detsim.fileio.bounded_read.MAX_LINE_BYTES` is an error, and so are more records than the memory available holds. h, k and l may be written as integral floats
    ("1.0", "2e1"): they are accepted as the integers they denote, whereas nanoBragg's second,
    ``%d``-based pass would misread them. Non-integral indices ("1.5") are an error, not a warning.

    Args:
        path: The HKL file.
        default_F: Fill value for unlisted in-box entries (a finite number).

    Returns:
        The table; nothing is returned on error.

    Raises:
        HKLError: The file cannot be read or is not a regular file, a line is too long or not four
            numbers, an index is not an integer (or not representable as a C int), F is not finite,
            there are no records, or more than memory holds. The message is one line naming the file
            and, where there is one, the line number.
        ValueError: ``default_F`` is not finite.
    """
    if not math.isfinite(default_F):
        raise ValueError(f"default_F must be finite, got {default_F!r}")
    source = os.fspath(path)
    records = _read_records(source)
    hkl, amplitudes = records[:, :3], records[:, 3]

    indices = hkl.astype(np.int64)
    lows = indices.min(axis=0)
    shape = tuple(int(n) for n in indices.max(axis=0) - lows + 1)
    size = shape[0] * shape[1] * shape[2]
    available = memory.available_bytes(torch.device("cpu"))
    if size * HKL_BYTES_PER_ENTRY > available:
        raise HKLError(
            f"{source}: index box {shape[0]} x {shape[1]} x {shape[2]} ({size} entries) needs "
            f"{memory.gib(size * HKL_BYTES_PER_ENTRY)} of memory, more than the {memory.gib(available)} available"
        )
    try:
        values = np.full(shape, float(default_F) if default_F != 0 else 0.0, dtype=np.float64)
    except (MemoryError, ValueError):
        raise HKLError(
            f"{source}: index box {shape[0]} x {shape[1]} x {shape[2]} ({size} entries) is too large"
        ) from None

    linear = np.ravel_multi_index(tuple((indices - lows).T), shape)
    _, first_from_end = np.unique(linear[::-1], return_index=True)
    last = len(linear) - 1 - first_from_end
    values.reshape(-1)[linear[last]] = amplitudes[last]
    values.setflags(write=False)
    return HKLTable(
        h_min=int(lows[0]),
        k_min=int(lows[1]),
        l_min=int(lows[2]),
        values=values,
        count=records.shape[0],
        source=source,
    )


def _lagrange_reduce(products: Tensor, ya: Tensor) -> Tensor:
    """Sum the four Lagrange terms along the last axis of ``ya``, in nanoBragg's polint form.

    Term i is ``(products_i * ya_i) / prod_{j != i}(x_i - x_j)`` and the terms are added in the order
    0, 1, 2, 3, as spec §5.7 prescribes for bit-level parity.

    Args:
        products: Node-distance products ``prod_{j != i}(x - x_j)``, shape broadcastable to ``ya``.
        ya: Node values, shape (..., 4).

    Returns:
        The interpolated values, shape (...,).
    """
    terms = [products[..., i] * ya[..., i] / _LAGRANGE_DENOMINATORS[i] for i in range(4)]
    return ((terms[0] + terms[1]) + terms[2]) + terms[3]


class StructureFactors:
    """F(h,k,l) lookups on a device/dtype; built from an HKLTable or none (default_F only).

    Attributes:
        default_F: F outside the table box, and everywhere when there is no table.
        h_min, k_min, l_min, h_max, k_max, l_max: The table box (0 and -1 when there is no table).
        values: The F table as a tensor of shape (h_range, k_range, l_range), or None without a table.
            It is a leaf tensor: call ``values.requires_grad_()`` to differentiate with respect to F,
            or use :meth:`with_values` to plug in another tensor of the same shape.
        device: Device of ``values``.
        dtype: Floating dtype of ``values`` and of results without a table.
    """

    def __init__(
        self,
        table: HKLTable | None,
        default_F: float,
        *,
        device: torch.device | str | None = None,
        dtype: torch.dtype = torch.float64,
    ) -> None:
        """Copy the table to ``device`` as ``dtype``.

        Args:
            table: The F table, or None to use ``default_F`` everywhere. A table with ``count == 0``
                counts as none, as in nanoBragg.
            default_F: F outside the box (spec §5.7).
            device: Where lookups run.
            dtype: Floating dtype of the table tensor.
        """
        self.default_F = float(default_F)
        self.dtype = dtype
        self.device = torch.device(device) if device is not None else torch.device("cpu")
        if table is not None and table.count > 0:
            self.h_min, self.k_min, self.l_min = table.h_min, table.k_min, table.l_min
            self.values: Tensor | None = torch.tensor(table.values, dtype=dtype, device=self.device)
        else:
            self.h_min = self.k_min = self.l_min = 0
            self.values = None
        self._set_ranges()

    def _set_ranges(self) -> None:
        shape = tuple(self.values.shape) if self.values is not None else (0, 0, 0)
        self.h_range, self.k_range, self.l_range = shape
        self.h_max = self.h_min + self.h_range - 1
        self.k_max = self.k_min + self.k_range - 1
        self.l_max = self.l_min + self.l_range - 1

    def with_values(self, values: Tensor) -> StructureFactors:
        """Return a copy of these lookups over the same box with another F tensor.

        Args:
            values: New table, shape (h_range, k_range, l_range); may require grad. Its device and
                dtype become those of the copy.

        Returns:
            A new :class:`StructureFactors`; ``self`` is unchanged.

        Raises:
            ValueError: There is no table, or the shape differs from the box.
        """
        if self.values is None:
            raise ValueError("with_values needs a table; this StructureFactors has none")
        if tuple(values.shape) != tuple(self.values.shape):
            raise ValueError(f"values must have shape {tuple(self.values.shape)}, got {tuple(values.shape)}")
        other = object.__new__(StructureFactors)
        other.__dict__.update(self.__dict__)
        other.values = values
        other.device = values.device
        other.dtype = values.dtype
        return other

    def _constant(self, like: Tensor) -> Tensor:
        return torch.full(like.shape, self.default_F, dtype=self.dtype, device=like.device)

    def _linear_index(self, ih: Tensor, ik: Tensor, il: Tensor) -> Tensor:
        return (ih * self.k_range + ik) * self.l_range + il

    def nearest(self, h0: Tensor, k0: Tensor, l0: Tensor) -> Tensor:
        """Nearest-node F (spec §5.7, interpolation off).

        ``F = table[h0, k0, l0]`` when there is a table and h0, k0, l0 all lie inside
        [min, max] on their axis; ``default_F`` otherwise (NaN indices count as outside).

        Args:
            h0: Integer-valued float tensor, shape broadcastable to (*); the caller rounds
                fractional h with ``ceil(h - 0.5)`` (spec §5.6).
            k0: Same for k.
            l0: Same for l.

        Returns:
            F, shape (*), dtype of the table.
        """
        h0, k0, l0 = torch.broadcast_tensors(h0, k0, l0)
        if self.values is None:
            return self._constant(h0)
        inside = (
            (h0 >= self.h_min) & (h0 <= self.h_max)
            & (k0 >= self.k_min) & (k0 <= self.k_max)
            & (l0 >= self.l_min) & (l0 <= self.l_max)
        )
        ih = torch.where(inside, h0 - self.h_min, 0).long()
        ik = torch.where(inside, k0 - self.k_min, 0).long()
        il = torch.where(inside, l0 - self.l_min, 0).long()
        found = self.values.reshape(-1)[self._linear_index(ih, ik, il)]
        return torch.where(inside, found, self.default_F)

    def interpolable(self, h: Tensor, k: Tensor, l: Tensor) -> Tensor:
        """Edge guard of spec §5.7: where the tricubic interpolation is allowed.

        nanoBragg rejects a point when ``(h - h_min + 3) > h_range`` or ``h - 2 < h_min``, with
        ``h_range = h_max - h_min + 1`` (same for k, l). The first test is ``h > h_max - 2``, the second
        ``h < h_min + 2``, so a point is allowed exactly when

            ``h_min + 2 <= h <= h_max - 2``, ``k_min + 2 <= k <= k_max - 2``, ``l_min + 2 <= l <= l_max - 2``,

        both ends included. The comparisons are evaluated in nanoBragg's arithmetic form
        (``h - h_min + 3 <= h_range`` and ``h - 2 >= h_min``) so that rounding agrees. NaN indices are
        not allowed (nanoBragg's negated test would let them through). Without a table nothing is.

        Note the guard is one node stricter than the stencil needs at the low end: at
        ``h = h_min + 2`` the nodes are ``h_min + 1 .. h_min + 4``.

        Args:
            h: Fractional h, shape broadcastable to (*).
            k: Fractional k.
            l: Fractional l.

        Returns:
            Bool tensor, shape (*).
        """
        h, k, l = torch.broadcast_tensors(h, k, l)
        if self.values is None:
            return torch.zeros(h.shape, dtype=torch.bool, device=h.device)
        ok = torch.ones(h.shape, dtype=torch.bool, device=h.device)
        axes = ((h, self.h_min, self.h_range), (k, self.k_min, self.k_range), (l, self.l_min, self.l_range))
        for x, lo, n in axes:
            ok = ok & (x - lo + 3 <= n) & (x - 2 >= lo)
        return ok

    def _stencil(self, x: Tensor, lo: int, n: int) -> tuple[Tensor, Tensor]:
        """Node-distance products and clamped table indices of the 4-node stencil along one axis.

        Non-finite or out-of-box coordinates are first clamped into the box, so that every result is
        finite and every index valid; inside the box ``x`` is used unchanged.

        Args:
            x: Fractional index, shape (*).
            lo: Axis minimum.
            n: Axis range (number of nodes).

        Returns:
            ``products`` of shape (*, 4), ``products[..., i] = prod_{j != i} (x - x_j)`` in the order
            nanoBragg multiplies them, and ``index`` of shape (*, 4), the table index of node i.
        """
        x = torch.nan_to_num(x, nan=float(lo)).clamp(lo, lo + n - 1)
        base = torch.floor(x)
        d = [x - (base + (i - 1)) for i in range(4)]
        products = torch.stack(
            [d[1] * d[2] * d[3], d[0] * d[2] * d[3], d[0] * d[1] * d[3], d[0] * d[1] * d[2]], dim=-1
        )
        offsets = torch.arange(-1, 3, device=x.device)
        index = ((base - lo).long().unsqueeze(-1) + offsets).clamp(0, n - 1)
        return products, index

    def tricubic(self, h: Tensor, k: Tensor, l: Tensor) -> Tensor:
        """Tricubic Lagrange interpolation of F at fractional (h, k, l) (spec §5.7, interpolation on).

        Along each axis the nodes are ``floor(x) - 1 .. floor(x) + 2``; the 4x4x4 node values are
        combined by the tensor-product 4-point Lagrange cubic, reduced along l, then k, then h, each
        1-D step written as nanoBragg's polint writes it (terms ``x0..x3``, each
        ``prod(x - x_j) * y_i / prod(x_i - x_j)``, summed in that order). The result reproduces any
        polynomial of degree <= 3 per axis and equals the table at integer nodes.

        Only meaningful where :meth:`interpolable` is True; elsewhere the result is finite but
        arbitrary (indices are clamped into the box), and the caller must mask it. Without a table
        the result is ``default_F``. Differentiable in h, k, l (piecewise, within each unit cell)
        and in the table values. Memory: gathers (*, 4, 4, 4) values, so chunk very large batches.

        Args:
            h: Fractional h, shape broadcastable to (*).
            k: Fractional k.
            l: Fractional l.

        Returns:
            Interpolated F, shape (*), dtype promoted from the inputs and the table.
        """
        h, k, l = torch.broadcast_tensors(h, k, l)
        if self.values is None:
            return self._constant(h)
        ph, ih = self._stencil(h, self.h_min, self.h_range)
        pk, ik = self._stencil(k, self.k_min, self.k_range)
        pl, il = self._stencil(l, self.l_min, self.l_range)
        linear = self._linear_index(ih[..., :, None, None], ik[..., None, :, None], il[..., None, None, :])
        block = self.values.reshape(-1)[linear]
        along_l = _lagrange_reduce(pl[..., None, None, :], block)
        along_k = _lagrange_reduce(pk[..., None, :], along_l)
        return _lagrange_reduce(ph, along_k)
