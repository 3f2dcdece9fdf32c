// A sortable, paged table over rows addressed by index (0..n-1), so that 100,000 trials cost one
// index array and only the visible page is ever turned into DOM. Columns say how to sort
// (value(i)) and how to show (render(i)); clicking a header sorts by it, again reverses. A column's
// `filter` (an element, e.g. a select) sits in a second header row; setFilter(keep) shows only the
// rows keep(i) accepts (the caller owns the controls and the predicate).

import { h, clear } from "./dom.js";

export class DataTable {
  // columns: [{key, label, value(i), render(i), cls, title, filter}], opts: {pageSize, empty, onRow(i, tr)}
  constructor(columns, opts = {}) {
    this.columns = columns;
    this.pageSize = opts.pageSize || 50;
    this.emptyText = opts.empty || "Nothing to show.";
    this.onRow = opts.onRow;
    this.n = 0;
    this.order = null; // Int32Array of the rows shown, in order, when sorted or filtered
    this.shown = 0; // rows shown (n unless filtered)
    this.keep = null; // filter predicate, or null
    this.sortKey = opts.sortKey || null;
    this.sortDir = opts.sortDir || 1;
    this.page = 0;
    this.thead = h("thead");
    this.tbody = h("tbody");
    this.info = h("span", { class: "pager-info" });
    this.el = h(
      "div",
      { class: "datatable" },
      h("div", { class: "table-scroll" }, h("table", {}, this.thead, this.tbody)),
      h(
        "div",
        { class: "pager" },
        h("button", { type: "button", class: "small", title: "first page", onclick: () => this.go(0) }, "«"),
        h("button", { type: "button", class: "small", title: "previous page", onclick: () => this.go(this.page - 1) }, "‹"),
        this.info,
        h("button", { type: "button", class: "small", title: "next page", onclick: () => this.go(this.page + 1) }, "›"),
        h("button", { type: "button", class: "small", title: "last page", onclick: () => this.go(Infinity) }, "»"),
        h(
          "select",
          { "aria-label": "rows per page", onchange: (e) => this.setPageSize(+e.target.value) },
          [25, 50, 100, 500].map((s) => h("option", { value: s, selected: s === this.pageSize }, s + " / page"))
        )
      )
    );
    this.renderHead();
  }

  renderHead() {
    clear(
      this.thead,
      h(
        "tr",
        {},
        this.columns.map((c) =>
          h(
            "th",
            {
              class: [c.cls, c.value ? "sortable" : ""].filter(Boolean).join(" "),
              title: c.title,
              "aria-sort": this.sortKey === c.key ? (this.sortDir > 0 ? "ascending" : "descending") : null,
              onclick: c.value ? () => this.sortBy(c.key) : null,
            },
            c.label,
            this.sortKey === c.key ? (this.sortDir > 0 ? " ▲" : " ▼") : ""
          )
        )
      ),
      // Filters in cells of their own (td: a header's text stays its label).
      this.columns.some((c) => c.filter)
        ? h("tr", { class: "filter-row" }, this.columns.map((c) => h("td", { class: c.cls }, c.filter || null)))
        : null
    );
  }

  // Shows only the rows keep(i) accepts (null: every row), from the first page.
  setFilter(keep) {
    this.keep = keep;
    this.page = 0;
    this.sort();
    this.render();
  }

  // The row count changed (or the rows did): re-sorts if sorted, keeps the page when it still exists.
  setCount(n, { force } = {}) {
    const changed = n !== this.n || force;
    this.n = n;
    if (changed || (!this.sortKey && !this.keep)) this.sort();
    this.render();
  }

  sortBy(key) {
    if (this.sortKey === key) this.sortDir = -this.sortDir;
    else {
      this.sortKey = key;
      this.sortDir = 1;
    }
    this.sort();
    this.page = 0;
    this.renderHead();
    this.render();
  }

  // Builds the order of the rows shown: those the filter keeps, sorted by the sort column.
  sort() {
    const col = this.columns.find((c) => c.key === this.sortKey && c.value);
    if (!col && !this.keep) {
      this.order = null;
      this.shown = this.n;
      return;
    }
    let m = 0;
    const all = new Int32Array(this.n);
    for (let i = 0; i < this.n; i++) if (!this.keep || this.keep(i)) all[m++] = i;
    const order = m === this.n ? all : all.slice(0, m);
    this.order = order;
    this.shown = m;
    if (!col) return;
    const keys = new Array(this.n);
    for (const i of order) keys[i] = col.value(i);
    const dir = this.sortDir;
    // Missing values (NaN, null, undefined) last in both directions.
    order.sort((a, b) => {
      const x = keys[a], y = keys[b];
      const mx = x === null || x === undefined || x !== x, my = y === null || y === undefined || y !== y;
      if (mx || my) return mx === my ? a - b : mx ? 1 : -1;
      if (x < y) return -dir;
      if (x > y) return dir;
      return a - b;
    });
  }

  setPageSize(s) {
    const first = this.page * this.pageSize;
    this.pageSize = s;
    this.page = Math.floor(first / s);
    this.render();
  }

  pages() {
    return Math.max(1, Math.ceil(this.shown / this.pageSize));
  }

  go(p) {
    this.page = Math.max(0, Math.min(this.pages() - 1, p));
    this.render();
  }

  render() {
    if (this.page >= this.pages()) this.page = this.pages() - 1;
    const start = this.page * this.pageSize;
    const end = Math.min(this.shown, start + this.pageSize);
    const rows = [];
    for (let k = start; k < end; k++) {
      const i = this.order ? this.order[k] : k;
      const tr = h("tr", {}, this.columns.map((c) => h("td", { class: c.cls }, c.render(i))));
      if (this.onRow) this.onRow(i, tr);
      rows.push(tr);
    }
    const empty = this.n && !this.shown ? "No row passes the filter." : this.emptyText;
    if (!rows.length) rows.push(h("tr", {}, h("td", { colspan: this.columns.length, class: "empty" }, empty)));
    clear(this.tbody, rows);
    const of = this.shown < this.n ? ` (filtered from ${this.n.toLocaleString("en")})` : "";
    this.info.textContent = this.shown
      ? `${(start + 1).toLocaleString("en")}–${end.toLocaleString("en")} of ${this.shown.toLocaleString("en")}${of}`
      : "0 rows" + of;
  }
}
