// The job page's parameter views (issue 31), as optuna-dashboard has them: a column per parameter
// in the trials table (sortable by value, with a value filter in the header's second row), the
// parameters' importance from the job's own trials (a sorted bar chart), parallel coordinates
// (parallel.js) and a slice plot per parameter. The filter narrows the table and every view here.
// The figures come from param_stats.js.
//
// Call order: const v = new ParamViews(ts, {objective, logY, onFilter}); put v.el in the page;
// after each batch of trials v.update() (then v.columns() for the table, which changes when the
// parameters first appear: v.columnsChanged) and v.draw(); v.flush() when everything is loaded,
// v.redraw() when a page setting changes;
// v.destroy() on leaving (charts, resize observer, timer).

import { h, clear, fmtNum } from "./dom.js";
import { makeChart, updateChart, destroyChart, color } from "./charts.js";
import { ParamIndex, selectRows, importance, slicePoints, parallelLines } from "./param_stats.js";
import { drawParallel, RAMP } from "./parallel.js";

const REDRAW_MS = 1000; // while trials arrive, the views are drawn at most this often
const MAX_BARS = 12; // the importance chart's bars; the rest are counted in its note
const pct = (s) => (s === null ? "–" : (100 * s).toFixed(s < 0.001 ? 2 : 1) + "%");

export class ParamViews {
  // ts: the TrialSet; objective(): {title, short, fmt}; logY(): the page's log-scale setting;
  // onFilter(): the filter changed (the page re-filters its table).
  constructor(ts, { objective, logY, onFilter }) {
    this.ts = ts;
    this.ix = new ParamIndex();
    this.objective = objective;
    this.logY = logY;
    this.onFilter = onFilter;
    this.filter = new Map(); // parameter index -> code
    this.selects = [];
    this.columnsChanged = false;
    this.charts = { importance: null, slices: [] };
    this.lastDraw = 0;
    this.timer = null;
    this.filterNote = h("div", { class: "filter-note", id: "param-filter-note" });
    this.impCanvas = h("canvas", { id: "importance-chart", "aria-label": "parameter importance" });
    this.impBox = h("div", { class: "chart-box short" }, this.impCanvas);
    this.impNote = h("p", { class: "muted small-text", id: "importance-note" });
    this.parCanvas = h("canvas", { id: "parallel-chart", "aria-label": "parallel coordinates of the trials" });
    this.parNote = h("p", { class: "muted small-text", id: "parallel-note" });
    this.legend = h("div", { class: "ramp-legend" });
    this.slices = h("div", { class: "slice-grid", id: "slices" });
    this.el = h(
      "section",
      { class: "card", id: "param-views" },
      h("div", { class: "card-head" }, h("h2", {}, "Parameters"), this.filterNote),
      h(
        "div",
        { class: "param-grid" },
        h("div", {}, h("h3", {}, "Importance"), this.impBox, this.impNote),
        h("div", {}, h("h3", {}, "Parallel coordinates"), h("div", { class: "parallel-box" }, this.parCanvas), this.legend, this.parNote)
      ),
      h("h3", {}, "Slices"),
      h("p", { class: "muted small-text" }, "The objective against each parameter's value, every ok trial shown (sampled above 1,500)."),
      this.slices
    );
    this.resize = new ResizeObserver(() => this.parallel && drawParallel(this.parCanvas, this.parallel, this.objective().fmt, this.objective().title));
    this.resize.observe(this.parCanvas);
    this.visible = false;
    this.stale = false;
    this.seen = new IntersectionObserver((entries) => {
      this.visible = entries.some((e) => e.isIntersecting);
      if (this.visible && this.stale) this.draw(true);
    });
    this.seen.observe(this.el);
  }

  // Indexes new trials; new values refill the filters. Returns whether anything arrived.
  update() {
    const hadParams = this.ix.names.length > 0;
    const grew = this.ix.update(this.ts);
    if (!grew) return false;
    if (!hadParams && this.ix.names.length) {
      this.selects = this.ix.names.map((name, p) =>
        h("select", { class: "param-filter", "data-param": name, "aria-label": `filter by ${name}`, onchange: (e) => this.setFilter(p, e.target.value) })
      );
      this.columnsChanged = true;
    }
    this.selects.forEach((sel, p) => {
      if (sel.options.length === this.ix.values[p].length + 1) return;
      const keep = sel.value;
      clear(sel, h("option", { value: "" }, "all"), this.ix.sorted[p].map((c) => h("option", { value: String(c) }, String(this.ix.values[p][c]))));
      sel.value = keep;
    });
    return true;
  }

  // The table's columns, one per parameter: its value, sorted by value (numbers numerically).
  columns() {
    this.columnsChanged = false;
    return this.ix.names.map((name, p) => ({
      key: "param:" + name, param: true, label: name, cls: "num param-col", title: `parameter ${name}: click to sort, pick a value below to filter`,
      filter: this.selects[p],
      value: (i) => this.ix.sortKey(p, i),
      render: (i) => {
        const v = this.ix.value(p, i);
        return v === undefined ? "–" : typeof v === "string" ? v : JSON.stringify(v);
      },
    }));
  }

  // The table's filter: null when none.
  keep() {
    if (!this.filter.size) return null;
    const conds = [...this.filter.entries()];
    return (i) => conds.every(([p, code]) => this.ix.codes[p][i] === code);
  }

  setFilter(p, value) {
    if (value === "") this.filter.delete(p);
    else this.filter.set(p, Number(value));
    this.selects[p].value = value;
    this.onFilter();
    this.draw(true);
  }

  clearFilter() {
    this.filter.clear();
    this.selects.forEach((s) => (s.value = ""));
    this.onFilter();
    this.draw(true);
  }

  // Draws the views: now (force), or, while trials arrive, within REDRAW_MS and only when they are
  // on screen (off screen they are marked stale and drawn when scrolled to, or by flush()), so that
  // a live job's page spends nothing on views nobody sees.
  draw(force) {
    if (!this.ix.names.length) {
      clear(this.filterNote);
      this.impNote.textContent = this.ts.n ? "These trials have no parameters." : "No trials yet.";
      return;
    }
    if (!force && !this.visible) {
      this.stale = true;
      return;
    }
    const wait = this.lastDraw + REDRAW_MS - performance.now();
    if (!force && wait > 0) {
      if (!this.timer) this.timer = setTimeout(() => ((this.timer = null), this.draw(true)), wait);
      return;
    }
    clearTimeout(this.timer);
    this.timer = null;
    this.stale = false;
    this.lastDraw = performance.now();
    const sel = selectRows(this.ts, this.ix, this.filter);
    this.renderFilterNote(sel);
    this.drawImportance(sel);
    this.drawParallel(sel);
    this.drawSlices(sel);
    this.el.dataset.drawn = String(sel.rows.length);
  }

  // Everything is loaded: what is stale or pending is drawn now when on screen, else when the
  // browser is idle (after the page's charts and table, which the page's load time measures).
  flush() {
    if (!this.stale && !this.timer) return;
    clearTimeout(this.timer);
    this.timer = null;
    if (this.visible) this.draw(true);
    else this.idle = requestIdleCallback(() => this.stale && this.draw(true), { timeout: 2000 });
  }

  // A setting of the page changed (the log scale): drawn now if on screen, else when scrolled to.
  redraw() {
    if (this.visible) this.draw(true);
    else this.stale = true;
  }

  renderFilterNote(sel) {
    const searched = this.ts.searchN;
    const shown = sel.rows.length + sel.failed;
    if (!this.filter.size) {
      clear(this.filterNote, `${searched.toLocaleString("en")} evaluations; filter by a parameter's value in the table's header.`);
      return;
    }
    const what = [...this.filter.entries()].map(([p, c]) => `${this.ix.names[p]} = ${this.ix.values[p][c]}`).join(", ");
    clear(
      this.filterNote,
      h("strong", {}, "Filter: " + what),
      ` · ${shown.toLocaleString("en")} of ${searched.toLocaleString("en")} evaluations `,
      h("button", { type: "button", class: "small", id: "clear-filter", onclick: () => this.clearFilter() }, "clear")
    );
  }

  drawImportance(sel) {
    const imp = importance(this.ix, sel.rows, sel.y);
    // A parameter with one value here (pinned by the filter) explains nothing: said, not drawn.
    const pinned = imp.params.filter((x) => x.levels === 1).map((x) => x.name);
    const ranked = imp.params.filter((x) => x.share !== null && x.levels > 1);
    const shown = ranked.slice(0, MAX_BARS);
    const unknown = imp.params.filter((x) => x.share === null).map((x) => x.name);
    this.shares = new Map(imp.params.map((x) => [x.name, x.share]));
    this.ranked = imp.params.map((x) => x.p); // most important first (the parallel axes' choice)
    this.impCanvas.dataset.order = shown.map((x) => x.name).join(",");
    this.impBox.hidden = !shown.length;
    this.impBox.style.height = `${Math.max(120, 44 + 30 * shown.length)}px`;
    const data = {
      labels: shown.map((x) => x.name),
      datasets: [{ label: "share of the variance", data: shown.map((x) => 100 * x.share), backgroundColor: shown.map((x, k) => color(k === 0 ? 0 : 8, k === 0 ? 1 : 0.6)) }],
    };
    if (!this.charts.importance) {
      this.charts.importance = new window.Chart(this.impCanvas, {
        type: "bar",
        data,
        options: {
          indexAxis: "y", animation: false, responsive: true, maintainAspectRatio: false,
          plugins: { legend: { display: false }, tooltip: { callbacks: { label: (c) => `${c.label}: ${pct(c.raw / 100)} of the variance` } } },
          scales: { x: { min: 0, suggestedMax: 100, title: { display: true, text: "" } } },
        },
      });
    } else this.charts.importance.data = data;
    this.charts.importance.options.scales.x.title.text = `% of the variance of log(${this.objective().short})`;
    this.charts.importance.update("none");
    const n = imp.n.toLocaleString("en");
    const joint = imp.method === "joint";
    const parts = [
      `How much of the variance of log(${this.objective().short}) over the ${n} ok evaluations shown each parameter explains on its own: `,
      joint
        ? "the main effects of a functional ANOVA (fANOVA), fitted to this job's trials together (per-value means, by backfitting), so a parameter that only travels with an important one gets little. "
        : `too few evaluations to fit the parameters together (${n} for ${imp.df} degrees of freedom), so each is taken alone, chance-corrected (ω²): parameters that travel together share the credit. `,
      !shown.length ? "Too few ok evaluations here to tell the parameters apart. " : joint ? `Together they explain ${pct(imp.explained)}; the rest is interactions and noise. ` : "",
      ranked.length > shown.length ? `${ranked.length - shown.length} more parameters below ${pct(shown[shown.length - 1].share)} not drawn. ` : "",
      unknown.length ? `${unknown.join(", ")}: each value seen once, not estimated. ` : "",
      pinned.length ? `${pinned.join(", ")}: one value only here, explains nothing. ` : "",
      "A search samples unevenly: read it as a guide, not a measurement.",
    ];
    this.impNote.textContent = parts.join("");
  }

  drawParallel(sel) {
    const obj = this.objective();
    // Wide spaces (an accel mapping has ~30 parameters): the most important ones that fit, in
    // importance order (all of them, in the space's order, when they fit).
    const fits = Math.max(3, Math.floor(this.parCanvas.clientWidth / 90) - 1);
    const P = this.ix.names.length;
    const axes = P <= fits ? this.ix.names.map((_, p) => p) : this.ranked.slice(0, fits);
    this.parallel = sel.rows.length ? parallelLines(this.ts, this.ix, sel.rows, sel.y, 1500, axes) : null;
    const ctx = this.parCanvas.getContext("2d");
    if (!this.parallel) {
      ctx.clearRect(0, 0, this.parCanvas.width, this.parCanvas.height);
      this.parCanvas.dataset.lines = "0";
      this.parNote.textContent = "No ok evaluation to draw.";
      clear(this.legend);
      return;
    }
    drawParallel(this.parCanvas, this.parallel, obj.fmt, obj.title);
    const lines = this.parallel.lines.length;
    this.parCanvas.dataset.lines = String(lines);
    clear(
      this.legend,
      h("span", {}, "fastest " + obj.fmt(this.parallel.min)),
      h("span", { class: "ramp", style: `background: linear-gradient(to right, ${RAMP.join(", ")})` }),
      h("span", {}, "slowest " + obj.fmt(this.parallel.max))
    );
    const notes = [`One line per ok evaluation (${lines.toLocaleString("en")}${lines < sel.rows.length ? ` of ${sel.rows.length.toLocaleString("en")}: the fastest tenth and a sample` : ""}), coloured by ${obj.short}; each axis has its values evenly spaced in sorted order.`];
    if (axes.length < P) notes.push(`The ${axes.length} most important of the ${P} parameters have an axis (a wider window shows more).`);
    if (sel.failed) notes.push(`${sel.failed.toLocaleString("en")} failed evaluation${sel.failed === 1 ? "" : "s"} (no ${obj.short}) not drawn.`);
    this.parNote.textContent = notes.join(" ");
  }

  drawSlices(sel) {
    const obj = this.objective();
    const names = this.ix.names;
    if (this.slices.childElementCount !== names.length) {
      this.charts.slices.forEach(destroyChart);
      this.charts.slices = [];
      clear(this.slices, names.map((name) => h("div", { class: "slice" }, h("div", { class: "slice-title" }, name), h("div", { class: "chart-box slice-box" }, h("canvas", { class: "slice-chart", "data-param": name, "aria-label": `${obj.short} against ${name}` })))));
    }
    names.forEach((name, p) => {
      const sp = slicePoints(this.ts, this.ix, p, sel.rows);
      const vals = this.ix.values[p];
      const logX = sp.numeric && vals.length > 2 && vals.every((v) => v > 0) && Math.max(...vals) / Math.min(...vals) >= 64;
      const datasets = [{ label: name, data: sp.points, borderColor: color(3, 0.6), backgroundColor: color(3, 0.35), pointRadius: 3 }];
      const opts = {
        xTitle: name, yTitle: obj.title, logY: this.logY(), logX, xLabels: sp.labels,
        label: (c) => `${name} ${sp.labels ? sp.labels[c.raw.x] : fmtNum(c.raw.x)}: ${obj.fmt(c.raw.y)}`,
      };
      const canvas = this.slices.children[p].querySelector("canvas");
      canvas.dataset.points = String(sp.points.length);
      const share = this.shares && this.shares.get(name);
      this.slices.children[p].querySelector(".slice-title").textContent = share === undefined ? name : `${name} · ${pct(share)}`;
      if (this.charts.slices[p]) updateChart(this.charts.slices[p], datasets, opts);
      else {
        const chart = (this.charts.slices[p] = makeChart(canvas, datasets, opts));
        chart.options.plugins.legend.display = false; // one series: its name is the title
        chart.update("none");
      }
    });
  }

  destroy() {
    clearTimeout(this.timer);
    this.resize.disconnect();
    this.seen.disconnect();
    if (this.idle) cancelIdleCallback(this.idle);
    destroyChart(this.charts.importance);
    this.charts.slices.forEach(destroyChart);
  }
}
