"""Streaming CSV/TSV parser: NumPy's C parser on newline-aligned blocks.

The file is decompressed in a background thread (:mod:`kopt.data.stream`) and
each block of whole lines goes through ``np.loadtxt``.  Rows are copied into
a float32 feature buffer and a float64 label buffer that grow in place
(``ndarray.resize``, a ``realloc``) to a size estimated from the fraction of
the file read, so peak memory stays near the size of the final arrays.

A block the C parser rejects is re-read line by line in Python, which either
finds the bad line (ragged row, non-numeric cell: a DataError with file and
line) or reads missing cells (empty, ``NA``, ``?``...) as NaN.
"""
from __future__ import annotations

import numpy as np

from ..errors import DataError
from .progress import ByteProgress
from .ranges import first_out_of_range, out_of_range_message
from .stream import file_size, iter_blocks, read_head

MISSING = frozenset({"", "na", "n/a", "nan", "null", "none", "?", "-"})
#: header names of the row-index column pandas writes (``DataFrame.to_csv`` with its default ``index=True``:
#: an empty name; ``Unnamed: 0`` once such a file is read back and written again)
INDEX_NAMES = frozenset({"", "Unnamed: 0"})


def _is_number(cell: str) -> bool:
    try:
        float(cell)
        return True
    except ValueError:
        return False


def _cells(line: str, delim):
    parts = line.split(delim) if delim is not None else line.split()
    return [c.strip().strip('"').strip("'").strip() for c in parts]


def sniff(path, fmt, header="auto"):
    """Delimiter, header names (or None), column count and the number of lines
    before the first data row, from the first non-blank line of the file."""
    head = read_head(path)
    try:
        text = head.decode("utf-8")
    except UnicodeDecodeError:
        text = head.decode("utf-8", errors="replace")
    lines = text.split("\n")
    if len(head) == 1 << 16 and len(lines) > 1:
        lines = lines[:-1]  # the last one may be cut
    first = next((i for i, ln in enumerate(lines) if ln.strip()), None)
    if first is None:
        raise DataError(f"{path}: the file is empty (no data rows)")
    line = lines[first].strip().lstrip("\ufeff")
    if fmt == "tsv":
        delim = "\t"
    elif "," in line:
        delim = ","
    elif "\t" in line:
        delim = "\t"
    elif ";" in line:
        delim = ";"
    else:
        delim = None  # whitespace
    cells = _cells(line, delim)
    looks_header = any(not _is_number(c) and c.lower() not in MISSING for c in cells)
    if header is True or (header == "auto" and looks_header):
        return delim, cells, len(cells), first + 1
    return delim, None, len(cells), first


def index_column(names):
    """0 when the header's first name is that of a pandas row index (:data:`INDEX_NAMES`), else None.

    Only the first column, and only with a header: a headerless first column of 0, 1, 2, ... is data."""
    if names and len(names) > 1 and names[0] in INDEX_NAMES:
        return 0
    return None


def column_plan(names, ncols, label, path):
    """``(index, label, features)``: the file columns of a pandas row index (or None), of the label (or None)
    and of the features, for a ``label`` option counted without the index column."""
    index = index_column(names)
    rest = [j for j in range(ncols) if j != index]
    pos = label_index(label, None if names is None else [names[j] for j in rest], len(rest), path)
    li = None if pos is None else rest[pos]
    return index, li, [j for j in rest if j != li]


class _Growing:
    """Float32 features and float64 labels that grow in place."""

    def __init__(self, n_x, has_y):
        self.n_x = n_x
        self.has_y = has_y
        self.n = 0
        self.cap = 0
        self.X = np.empty((0, n_x), dtype=np.float32)
        self.y = np.empty(0, dtype=np.float64) if has_y else None

    def reserve(self, need, estimate):
        if need <= self.cap:
            return
        # estimate-driven growth (a realloc: no copy on Linux); at least 1/32 more each time, so a
        # persistently low estimate cannot turn into one reallocation per block
        if estimate:
            cap = max(need, int(estimate * 1.02) + 1024, self.cap + self.cap // 32)
        else:
            cap = max(need, 2 * self.cap)
        self.X.resize((cap, self.n_x), refcheck=False)
        if self.has_y:
            self.y.resize(cap, refcheck=False)
        self.cap = cap

    def append(self, X, y):
        r = X.shape[0]
        self.X[self.n : self.n + r] = X
        if self.has_y:
            self.y[self.n : self.n + r] = y
        self.n += r

    def finish(self):
        if self.cap != self.n:
            self.X.resize((self.n, self.n_x), refcheck=False)
            if self.has_y:
                self.y.resize(self.n, refcheck=False)
        return self.X, self.y


class NonFinite:
    """Where the first NaN/inf cell of a file is, and how many there are."""

    def __init__(self):
        self.count = 0
        self.line = None
        self.column = None

    def scan(self, A, lines, first_line, columns):
        ok = np.isfinite(A)
        if ok.all():
            return
        self.count += int(A.size - np.count_nonzero(ok))
        if self.line is not None:
            return
        r, c = np.argwhere(~ok)[0]
        data_lines = [i for i, ln in enumerate(lines) if ln.strip()]
        self.line = first_line + data_lines[r]
        self.column = columns[c]


def _check_range(A, lines, first_line, columns, path):
    at = first_out_of_range(A)
    if at is not None:
        r, c = at
        data_lines = [i for i, ln in enumerate(lines) if ln.strip()]
        raise DataError(f"{path}:{first_line + data_lines[r]}: column {columns[c]}: {out_of_range_message(A[r, c])}")


def parse_block(lines, delim, ncols, path, first_line, quote):
    """A ``(rows, ncols)`` float64 array of ``lines``; DataError with file:line on bad rows."""
    if not any(ln.strip() for ln in lines):  # stops at the first data line
        return np.empty((0, ncols))
    try:
        A = np.loadtxt(lines, delimiter=delim, dtype=np.float64, ndmin=2, comments=None, quotechar=quote)
        if A.shape[1] == ncols:
            return A
    except ValueError:
        pass
    return _parse_slow(lines, delim, ncols, path, first_line)


def _parse_slow(lines, delim, ncols, path, first_line):
    rows = []
    for k, line in enumerate(lines):
        if not line.strip():
            continue
        cells = _cells(line.strip(), delim)
        lineno = first_line + k
        if len(cells) != ncols:
            raise DataError(f"{path}:{lineno}: expected {ncols} columns, found {len(cells)} (ragged row)")
        row = []
        for j, cell in enumerate(cells):
            try:
                row.append(float(cell))
            except ValueError:
                if cell.lower() not in MISSING:
                    raise DataError(f"{path}:{lineno}: column {j + 1}: non-numeric cell {cell!r}") from None
                row.append(np.nan)
        rows.append(row)
    return np.asarray(rows, dtype=np.float64).reshape(len(rows), ncols)


def _decode(block, path):
    try:
        return block.data.decode("utf-8").split("\n")
    except UnicodeDecodeError as exc:
        line = block.first_line + block.data[: exc.start].count(b"\n")
        raise DataError(f"{path}:{line}: not UTF-8 text (is this a binary file? give data.format)") from None


def read_csv(path, *, fmt="csv", label=0, header="auto", max_rows=None, progress=None):
    """Parse a delimited text file (optionally gzip/xz/bzip2-compressed).

    Parameters
    ----------
    path : str
    fmt : {"csv", "tsv"}
        ``tsv`` forces a tab delimiter; ``csv`` sniffs ``,``, tab, ``;`` or whitespace.
    label : int, str, False or None
        Label column: index (negative counts from the end), header name,
        ``False`` for none; ``None`` means the first column.  A pandas row-index
        column (a header whose first name is empty) is skipped and not counted.
    header : {"auto", True, False}
    max_rows : int, optional
        Stop after this many data rows.
    progress : bool, optional
        Draw a progress line on stderr (default: only when stderr is a tty).

    Returns
    -------
    X : ndarray (n, d) float32
    y : ndarray (n,) float64 or None
    meta : dict
        ``header`` (column names or None), ``columns`` (file column count),
        ``label_column`` (index or None), ``index_column`` (0 for a pandas row index, skipped;
        else None), ``feature_names`` and ``label_name`` (from the header, or None),
        ``nonfinite`` (count), ``first_nonfinite`` (``[line, column]`` or None).
    """
    delim, names, ncols, skip = sniff(path, fmt, header)
    index, li, features = column_plan(names, ncols, label, path)
    keep = np.array(features, dtype=np.intp)
    columns = names or [str(j + 1) for j in range(ncols)]
    buf = _Growing(len(keep), li is not None)
    bad = NonFinite()
    total = file_size(path)
    bar = ByteProgress(total, path.rsplit("/", 1)[-1], enabled=progress)
    try:
        for A, lines, first, raw_pos in iter_parsed(path, (delim, names, ncols, skip)):
            if max_rows is not None and buf.n + A.shape[0] > max_rows:
                A = A[: max_rows - buf.n]
            bad.scan(A, lines, first, columns)
            est = _estimate_rows(buf.n + A.shape[0], raw_pos, total, max_rows)
            buf.reserve(buf.n + A.shape[0], est)
            buf.append(A[:, keep], A[:, li] if li is not None else None)
            bar.update(raw_pos, buf.n)
            if max_rows is not None and buf.n >= max_rows:
                break
    finally:
        bar.close()
    if buf.n == 0:
        raise DataError(f"{path}: the file holds no data rows" + (" (only a header)" if names else ""))
    X, y = buf.finish()
    meta = {"header": names, "columns": ncols, "label_column": li, "index_column": index,
            "feature_names": None if names is None else [names[j] for j in features],
            "label_name": None if names is None or li is None else names[li],
            "nonfinite": bad.count, "first_nonfinite": None if bad.line is None else [bad.line, bad.column]}
    return X, y, meta


def iter_parsed(path, layout):
    """``(A, lines, first_line, raw_pos)`` per block of the file: ``A`` the float64 cells of its data rows
    (every finite one within float32's range), ``layout`` what :func:`sniff` returned."""
    delim, names, ncols, skip = layout
    columns = names or [str(j + 1) for j in range(ncols)]
    quote = '"' if delim is not None else None
    for block in iter_blocks(path):
        lines = _decode(block, path)
        first = block.first_line
        if first <= skip:
            drop = skip - first + 1
            lines, first = lines[drop:], first + drop
        A = parse_block(lines, delim, ncols, path, first, quote)
        _check_range(A, lines, first, columns, path)
        yield A, lines, first, block.raw_pos


def _estimate_rows(rows, raw_pos, total, max_rows):
    est = rows * total / raw_pos if raw_pos else None
    if max_rows is not None:
        est = min(est or max_rows, max_rows)
    return est


def label_index(label, header, ncols, path):
    """Column index of the label; None when ``label`` is False (no label column)."""
    if label is False:
        return None
    if label is None:
        return 0
    if isinstance(label, str):
        if header is None or label not in header:
            if label.lstrip("-").isdigit():
                return label_index(int(label), header, ncols, path)
            known = f"; columns: {', '.join(header)}" if header else " (the file has no header row)"
            raise DataError(f"{path}: label column {label!r} not found{known}")
        return header.index(label)
    idx = label if label >= 0 else ncols + label
    if not 0 <= idx < ncols:
        raise DataError(f"{path}: label column {label} is out of range for {ncols} columns")
    return idx
