"""Streaming CSV/TSV parser: NumPy's C parser on newline-aligned blocks.

The file is decompressed in a background thread (:mod:`kopt.data.stream`) and
each block of whole lines goes through ``np.loadtxt``.  Rows are copied into
a float32 feature buffer and a float64 label buffer that grow in place
(``ndarray.resize``, a ``realloc``) to a size estimated from the fraction of
the file read, so peak memory stays near the size of the final arrays.

A block the C parser rejects is re-read line by line in Python, which either
finds the bad line (ragged row, non-numeric cell: a DataError with file and
line) or reads missing cells (empty, ``NA``, ``?``...) as NaN.

A label column that holds text (class names such as ``yes``/``no``, decided from
the rows of the file's first 64 KiB, :func:`text_label`) is read as strings
(:func:`parse_text_block`): the C parser reads the other columns as numbers and
the label column apart, kept as a NumPy string array (a missing label cell is the
empty string).  Numeric files never take this path.
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
#: header names taken as the label column when ``data.label`` is not given (any case; exactly one must occur)
LABEL_NAMES = ("label", "target", "class", "y")


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
    following = next((ln.strip() for ln in lines[first + 1:] if ln.strip()), None)
    nxt = None if following is None else _cells(following, delim)
    if header is True or (header == "auto" and _looks_header(cells, nxt)):
        return delim, cells, len(cells), first + 1
    return delim, None, len(cells), first


def _is_text(cell: str) -> bool:
    return not _is_number(cell) and cell.lower() not in MISSING


def _looks_header(cells, nxt) -> bool:
    """Whether the first line is column names: it holds text, and (when a second line follows) a column that is
    text in it is a number or empty in the second.  A headerless file whose label column holds class names
    (``1.2,3.4,yes``) has text in the same column on both lines: data, not names -- unless the first line names
    a column ``label``, ``target``, ``class`` or ``y``, or its numbers are column positions (``,0,1,2,species``:
    pandas' names of the columns of a frame made from an array)."""
    text = [j for j, c in enumerate(cells) if _is_text(c)]
    if not text:
        return False
    if nxt is None or len(nxt) != len(cells) or len(text) == len(cells):
        return True
    if any(not _is_text(nxt[j]) for j in text) or any(cells[j].lower() in LABEL_NAMES for j in text):
        return True
    numbers = [(j, c) for j, c in enumerate(cells) if c.isdigit()]
    enough = len(numbers) >= 3 or (len(numbers) == 2 and cells[0] == "")  # a data row "0,1,yes" stays data
    return enough and len({int(c) - j for j, c in numbers}) == 1


def index_column(names):
    """0 when the header's first name is that of a pandas row index (:data:`INDEX_NAMES`), else None.

    Only the first column, and only with a header: a headerless first column of 0, 1, 2, ... is data."""
    if names and len(names) > 1 and names[0] in INDEX_NAMES:
        return 0
    return None


def column_plan(names, ncols, label, path):
    """``(index, label, features, how)``: the file columns of a pandas row index (or None), of the label (or
    None) and of the features, for a ``label`` option counted without the index column; ``how`` says where
    the label came from: ``given`` (the option), ``header`` (the one header name in :data:`LABEL_NAMES`,
    when the option is None) or ``default`` (the first column)."""
    index = index_column(names)
    rest = [j for j in range(ncols) if j != index]
    how = "given"
    if label is None:
        named = [j for j in rest if names is not None and names[j].lower() in LABEL_NAMES]
        label, how = (rest.index(named[0]), "header") if len(named) == 1 else (0, "default")
    pos = label_index(label, None if names is None else [names[j] for j in rest], len(rest), path)
    li = None if pos is None else rest[pos]
    return index, li, [j for j in rest if j != li], how


def head_rows(path, layout, limit=200):
    """``[(line, cells)]`` of the data rows in the first 64 KiB of the file (at most ``limit``)."""
    delim, names, ncols, skip = layout
    head = read_head(path)
    lines = head.decode("utf-8", errors="replace").split("\n")
    if len(head) == 1 << 16 and len(lines) > 1:
        lines = lines[:-1]  # the last one may be cut
    out = []
    for k, line in enumerate(lines[skip:], start=skip + 1):
        if line.strip():
            out.append((k, _cells(line.strip().lstrip("\ufeff"), delim)))
            if len(out) >= limit:
                break
    return out


def text_label(rows, li):
    """``(line, cell)`` of the first label cell among ``rows`` (:func:`head_rows`) that is text, not a number
    nor a missing marker; None when the label column reads as numbers."""
    if li is None:
        return None
    for line, cells in rows:
        if li < len(cells) and _is_text(cells[li]):
            return line, cells[li]
    return None


def text_feature(rows, features):
    """``(column, line, cell)`` of the first feature cell among ``rows`` that is text (None: all numbers)."""
    for line, cells in rows:
        for j in features:
            if j < len(cells) and _is_text(cells[j]):
                return j, line, cells[j]
    return None


def _label_hint(path, names, rest, li, found):
    """The error for a file whose label is its first column by default while another column holds text."""
    j, line, cell = found
    pos = rest.index(j)
    key = names[j] if names is not None else str(-1 if pos == len(rest) - 1 else pos)
    taken = f"column {li + 1}" + (f" {names[li]!r}" if names is not None else "")
    named = f"column {j + 1}" + (f" {names[j]!r}" if names is not None else "")
    return DataError(f"{path}:{line}: {named} holds text ({cell!r}), as a label column of class names does, but "
                     f"the label is the first column ({taken}) by default: set data.label: {key} in the spec "
                     "(docs/data.md)")


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

    def scan_missing(self, missing, lines, first_line, column):
        """Count the rows flagged in ``missing`` (missing class-name labels) as non-finite cells."""
        if not missing.any():
            return
        self.count += int(np.count_nonzero(missing))
        if self.line is None:
            data_lines = [i for i, ln in enumerate(lines) if ln.strip()]
            self.line = first_line + data_lines[int(np.argmax(missing))]
            self.column = column


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


def parse_text_block(lines, delim, ncols, path, first_line, quote, text):
    """``(A, labels)`` of ``lines`` whose column ``text`` holds class names: ``A`` as :func:`parse_block`
    gives it (column ``text`` zero), ``labels`` the stripped cells of that column (a missing cell: ``""``)."""
    data = [ln for ln in lines if ln.strip()]  # loadtxt warns of a blank line when it reads text
    if not data:
        return np.empty((0, ncols)), np.empty(0, dtype=str)
    others = [j for j in range(ncols) if j != text]
    try:
        if delim is not None and sum(ln.count(delim) for ln in data) == len(data) * (ncols - 1):
            # every row has ncols cells: the numbers by the C parser straight to float64, the names apart
            A = np.zeros((len(data), ncols), dtype=np.float64)
            A[:, others] = np.loadtxt(data, delimiter=delim, dtype=np.float64, ndmin=2, comments=None,
                                      quotechar=quote, usecols=others)
            cells = np.loadtxt(data, delimiter=delim, dtype=str, ndmin=1, comments=None, quotechar=quote,
                               usecols=[text])
        else:  # whitespace-delimited, or a delimiter inside quotes: one text pass, checked for its width
            S = np.loadtxt(data, delimiter=delim, dtype=str, ndmin=2, comments=None, quotechar=quote)
            if S.shape[1] != ncols:
                raise ValueError("ragged")
            A = np.zeros(S.shape, dtype=np.float64)
            A[:, others] = S[:, others].astype(np.float64)
            cells = S[:, text]
        labels = np.char.strip(np.char.strip(np.char.strip(np.char.strip(cells), '"'), "'"))  # as _cells does
        labels[np.isin(np.char.lower(labels), list(MISSING))] = ""
        return A, labels.astype(f"U{max(1, int(np.char.str_len(labels).max()))}")  # as wide as the names
    except ValueError:
        pass
    return _parse_slow(lines, delim, ncols, path, first_line, text)


def _parse_slow(lines, delim, ncols, path, first_line, text=None):
    rows, labels = [], []
    for k, line in enumerate(lines):
        if not line.strip():
            continue
        cells = _cells(line.strip(), delim)
        lineno = first_line + k
        if len(cells) != ncols:
            raise DataError(f"{path}:{lineno}: expected {ncols} columns, found {len(cells)} (ragged row)")
        row = []
        for j, cell in enumerate(cells):
            if j == text:
                labels.append("" if cell.lower() in MISSING else cell)
                row.append(0.0)
                continue
            try:
                row.append(float(cell))
            except ValueError:
                if cell.lower() not in MISSING:
                    raise DataError(f"{path}:{lineno}: column {j + 1}: non-numeric cell {cell!r}") from None
                row.append(np.nan)
        rows.append(row)
    A = np.asarray(rows, dtype=np.float64).reshape(len(rows), ncols)
    return A if text is None else (A, np.asarray(labels, dtype=str))


def _decode(block, path):
    try:
        return block.data.decode("utf-8").split("\n")
    except UnicodeDecodeError as exc:
        line = block.first_line + block.data[: exc.start].count(b"\n")
        raise DataError(f"{path}:{line}: not UTF-8 text (is this a binary file? give data.format)") from None


def read_csv(path, *, fmt="csv", label=None, header="auto", max_rows=None, progress=None, text_labels=False):
    """Parse a delimited text file (optionally gzip/xz/bzip2-compressed).

    Parameters
    ----------
    path : str
    fmt : {"csv", "tsv"}
        ``tsv`` forces a tab delimiter; ``csv`` sniffs ``,``, tab, ``;`` or whitespace.
    label : int, str, False or None
        Label column: index (negative counts from the end), header name,
        ``False`` for none; ``None``: the one header name in :data:`LABEL_NAMES`
        (any case), else the first column.  A pandas row-index column (a header
        whose first name is empty) is skipped and not counted.
    header : {"auto", True, False}
    max_rows : int, optional
        Stop after this many data rows.
    progress : bool, optional
        Draw a progress line on stderr (default: only when stderr is a tty).
    text_labels : bool
        Read the label column as text even where the file's first rows hold numbers (a test file read with
        the layout of a training file of class names).

    Returns
    -------
    X : ndarray (n, d) float32
    y : ndarray (n,) float64, a NumPy string array (a label column of class names), or None
    meta : dict
        ``header`` (column names or None), ``columns`` (file column count),
        ``label_column`` (index or None), ``label_from`` (``given``, ``header`` or ``default``),
        ``index_column`` (0 for a pandas row index, skipped; else None), ``feature_names`` and
        ``label_name`` (from the header, or None), ``label_text`` (``[line, cell]`` of the first label
        cell that is not a number, or None), ``nonfinite`` (count, missing labels included),
        ``first_nonfinite`` (``[line, column]`` or None).
    """
    layout = sniff(path, fmt, header)
    delim, names, ncols, skip = layout
    index, li, features, how = column_plan(names, ncols, label, path)
    rows = head_rows(path, layout)
    if how == "default":
        found = text_feature(rows, features)
        if found is not None:
            raise _label_hint(path, names, [j for j in range(ncols) if j != index], li, found)
    first_text = text_label(rows, li)
    del rows  # not held through the parse
    text = li if li is not None and (first_text is not None or text_labels) else None
    keep = np.array(features, dtype=np.intp)
    columns = names or [str(j + 1) for j in range(ncols)]
    buf = _Growing(len(keep), li is not None and text is None)
    labels = []
    bad = NonFinite()
    total = file_size(path)
    bar = ByteProgress(total, path.rsplit("/", 1)[-1], enabled=progress)
    try:
        for A, T, lines, first, raw_pos in iter_parsed(path, layout, text):
            if max_rows is not None and buf.n + A.shape[0] > max_rows:
                A = A[: max_rows - buf.n]
                T = None if T is None else T[: A.shape[0]]
            if text is None:
                bad.scan(A, lines, first, columns)
            else:
                bad.scan(A[:, keep], lines, first, [columns[j] for j in keep])
                bad.scan_missing(T == "", lines, first, columns[li])
                labels.append(T)
            est = _estimate_rows(buf.n + A.shape[0], raw_pos, total, max_rows)
            buf.reserve(buf.n + A.shape[0], est)
            buf.append(A[:, keep], A[:, li] if buf.has_y else None)
            bar.update(raw_pos, buf.n)
            if max_rows is not None and buf.n >= max_rows:
                break
    finally:
        bar.close()
    if buf.n == 0:
        raise DataError(f"{path}: the file holds no data rows" + (" (only a header)" if names else ""))
    X, y = buf.finish()
    if text is not None:
        y = np.concatenate(labels) if labels else np.empty(0, dtype=str)
    meta = {"header": names, "columns": ncols, "label_column": li, "label_from": None if li is None else how,
            "index_column": index,
            "feature_names": None if names is None else [names[j] for j in features],
            "label_name": None if names is None or li is None else names[li],
            "label_text": None if first_text is None else list(first_text),
            "nonfinite": bad.count, "first_nonfinite": None if bad.line is None else [bad.line, bad.column]}
    return X, y, meta


def iter_parsed(path, layout, text=None):
    """``(A, labels, lines, first_line, raw_pos)`` per block of the file: ``A`` the float64 cells of its data
    rows (every finite one within float32's range), ``layout`` what :func:`sniff` returned; with ``text`` (a
    column index), ``labels`` that column's cells as strings (:func:`parse_text_block`), else None."""
    delim, names, ncols, skip = layout
    columns = names or [str(j + 1) for j in range(ncols)]
    quote = '"' if delim is not None else None
    for block in iter_blocks(path):
        lines = _decode(block, path)
        first = block.first_line
        if first <= skip:
            drop = skip - first + 1
            lines, first = lines[drop:], first + drop
        if text is None:
            A, T = parse_block(lines, delim, ncols, path, first, quote), None
        else:
            A, T = parse_text_block(lines, delim, ncols, path, first, quote, text)
        _check_range(A, lines, first, columns, path)
        yield A, T, lines, first, block.raw_pos


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
