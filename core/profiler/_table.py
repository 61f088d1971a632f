"""The text report of an event list, in PyTorch's layout: right-aligned columns two spaces apart,
dashed rules, percentages of the self CPU time total, times as us / ms / s with three decimals."""
from __future__ import annotations

_WIDTH = 12          # every column but Name, Input Shapes and Source Location
_GAP = "  "


def format_time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _share(us: float, total: float) -> str:
    return "NaN" if total == 0 else f"{us * 100.0 / total:.2f}%"


def _sort_key(attr):
    attr = attr.replace("cuda", "device") if attr.startswith(("cuda", "self_cuda")) else attr
    if attr in ("cpu_time_avg",):
        attr = "cpu_time"

    def key(ev):
        v = getattr(ev, attr, None)
        if v is None:
            raise AttributeError(f"sort_by: events have no attribute {attr!r}")
        return v
    return key


def build_table(events, sort_by=None, row_limit=100, header=None, max_src_column_width=75,
                max_name_column_width=55, max_shapes_column_width=80, top_level_events_only=False) -> str:
    if len(events) == 0:
        return ""
    if sort_by is not None:
        events = sorted(events, key=_sort_key(sort_by), reverse=True)
    has_shapes = any(len(ev.input_shapes) > 0 for ev in events)
    has_stack = any(len(ev.stack) > 0 for ev in events)
    name_w = max(len(ev.key) for ev in events) + 4
    if max_name_column_width is not None:
        name_w = min(name_w, max_name_column_width)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"]
    widths = [name_w] + [_WIDTH] * (len(headers) - 1)
    aligns = [">"] * len(headers)
    if has_shapes:
        headers.append("Input Shapes")
        widths.append(min(max(len(str(ev.input_shapes)) for ev in events) + 4, max_shapes_column_width))
        aligns.append(">")
    if has_stack:
        headers.append("Source Location")
        widths.append(min(max(len(s) for ev in events for s in ev.stack) + 4, max_src_column_width))
        aligns.append("<")
    row_format = "".join("{:" + a + str(w) + "}" + _GAP for a, w in zip(aligns, widths))
    rule = "".join("-" * w + _GAP for w in widths)
    line_length = sum(w + len(_GAP) for w in widths) - len(_GAP)

    total = sum(ev.self_cpu_time_total for ev in events)
    lines = []
    if header is not None:
        lines += ["=" * line_length, header]
    if top_level_events_only:
        lines += ["=" * line_length, "This report only display top-level operations statistics"]
    lines += [rule, row_format.format(*headers), rule]
    shown = 0
    for ev in events:
        if shown == row_limit:
            break
        if top_level_events_only and ev.cpu_parent is not None:
            continue
        shown += 1
        name = ev.key
        if max_name_column_width is not None and len(name) >= max_name_column_width - 3:
            name = name[:max_name_column_width - 3] + "..."
        row = [name, _share(ev.self_cpu_time_total, total), format_time(ev.self_cpu_time_total),
               _share(ev.cpu_time_total, total), format_time(ev.cpu_time_total), format_time(ev.cpu_time),
               ev.count]
        if has_shapes:
            row.append(str(ev.input_shapes)[:widths[len(row)]])
        if has_stack:
            w = widths[-1]
            row.append(ev.stack[0][-w + 1:] if ev.stack else "")
        lines.append(row_format.format(*row))
        if has_stack:
            blank = [""] * (len(headers) - 1)
            for frame in ev.stack[1:]:
                lines.append(row_format.format(*blank, frame[-widths[-1] + 1:]))
            lines.append(row_format.format(*blank, ""))
    lines += [rule, f"Self CPU time total: {format_time(total)}"]
    return "\n".join(lines) + "\n"
