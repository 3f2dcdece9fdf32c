// Browser test of a finished job's page (issue 31): playwright-core drives Debian's chromium against
// a live ktuned measuring on its cpu device. A small kernel is registered over HTTP (POST
// /v1/kernels) whose U = 3 configurations do not compile (an #error: the compile log) and whose
// U = 5 configurations compute a wrong answer (a verification error, extras.max_abs_err); an
// exhaustive job of 12 evaluations (of its 14 configurations, the default among them) with a final
// pick of 3 candidates × 3 rounds and a seed above 2^53 sent as text, then a job on a problem the
// kernel refuses (every trial invalid: the job fails). The job page must show:
// - the final pick: its candidates and rounds in a table and a chart, and a sentence on why the
//   answer is what it is;
// - the convergence chart's x axis ending at the budget (12), not at 12 + the 9 re-measurements;
// - a compile_error trial's log one click away (its row's button), and a wrong_result trial's
//   max |error|;
// - GFLOP/s (the best's and a table column) and the speed-up over the kernel's default;
// - the seed exactly as sent (9007199254740993 = 2^53 + 1: a JavaScript number would show ...992);
// - the failed job's reason in words in a banner, not a JSON blob.
// The parameter views, on a job imported with known times (U sets the time, W adds 10%, U = 3 does
// not compile): a column per parameter that sorts by value and filters the rows, importance ranking
// U first, parallel coordinates with a line per ok trial, a slice plot per parameter, all narrowed
// by the filter; the importance fit itself on a sample where a second parameter travels with the
// one that matters (param_stats.js, imported here).
// No console errors, nothing loaded from outside; screenshots at desktop and phone widths
// (job-final-*.png, job-log-*.png, job-failed-*.png, job-params-*.png).
//
// Environment: KTUNE_KTUNED (the ktuned binary), KTUNE_SOURCE_DIR (the repository),
// KTUNE_ARTIFACTS (screenshots; default <tmp>/ktune-browser-artifacts).

import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Ktuned, launchBrowser, watchPage, closePage } from "./fixture.mjs";
import { ParamIndex, selectRows, importance } from "../../web/js/param_stats.js";

const KTUNED = process.env.KTUNE_KTUNED;
const SOURCE = process.env.KTUNE_SOURCE_DIR || path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const ARTIFACTS = process.env.KTUNE_ARTIFACTS || path.join(os.tmpdir(), "ktune-browser-artifacts");
const VIEWPORTS = { desktop: { width: 1366, height: 900 }, phone: { width: 390, height: 844 } };
const BUDGET = 12, COUNT = 3, ROUNDS = 3;
const SEED = "9007199254740993"; // 2^53 + 1: not a double
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// The imported job's times: U alone sets them, W = 1 adds 10%; U = 3 does not compile.
const U_TIME = { 1: 4, 2: 2, 4: 1, 5: 1.5, 6: 1.2, 8: 0.8 };

const SPEC = {
  name: "scale31",
  summary: "y = 3*x; U = 3 does not compile, U = 5 is wrong (a test kernel)",
  problem: [{ name: "n", min: 1, max: 1 << 22, default: 65536 }],
  buffers: [
    { name: "x", elements: "n", role: "input" },
    { name: "y", elements: "n", role: "output" },
  ],
  flops: "n",
  tolerance: { rtol: 1e-6, atol: 1e-7 },
  reference: { kind: "c", source: "reference.c" },
  variants: {
    cpu: {
      source: "cpu.c",
      parameters: [
        { name: "U", values: [1, 2, 3, 4, 5, 6, 8] },
        { name: "W", values: [0, 1] },
      ],
      restrictions: [],
      default: { U: 1, W: 0 },
    },
  },
  test_problem: { n: 1024 },
};
const CPU = `#if U == 3
#error "U = 3 is not supported by scale31 (the compile log the dashboard shows)"
#endif
int ktune_kernel(float *const *b, const long long *p);
int ktune_kernel(float *const *b, const long long *p)
{
    long long i = 0, n = p[0];
    if (n > (1 << 21))
        return 1; /* refused: the failed job */
    for (; i + U <= n; i += U)
        for (int u = 0; u < U; u++)
            b[1][i + u] = 3.0f * b[0][i + u] + (U == 5 ? 0.5f : 0.0f) + (W ? 0.0f : 0.0f);
    for (; i < n; i++)
        b[1][i] = 3.0f * b[0][i];
    return 0;
}
`;
const REFERENCE = `int ktune_reference(float *const *b, const long long *p);
int ktune_reference(float *const *b, const long long *p)
{
    for (long long i = 0; i < p[0]; i++)
        b[1][i] = 3.0f * b[0][i];
    return 0;
}
`;

describe("job page", { timeout: 600000 }, () => {
  let k, browser, job, failed, imported;

  async function newPage(viewport = VIEWPORTS.desktop) {
    const ctx = await browser.newContext({ viewport });
    const page = await ctx.newPage();
    return watchPage(page, k.base);
  }

  before(async () => {
    assert.ok(KTUNED, "KTUNE_KTUNED must name the ktuned binary");
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    k = new Ktuned(KTUNED, SOURCE, { extra: ["--workers", "1", "--min-seconds", "0.01"] });
    await k.start();
    browser = await launchBrowser();
    const made = await k.api("POST", "/v1/kernels", { spec: SPEC, files: { "cpu.c": CPU, "reference.c": REFERENCE } });
    assert.equal(made.status, 201, JSON.stringify(made.body));
    for (let until = Date.now() + 120000; Date.now() < until; await sleep(200)) {
      const v = (await k.api("GET", "/v1/kernels/" + SPEC.name)).body.versions.find((x) => x.version === made.body.version);
      if (v.status !== "validating") {
        assert.equal(v.status, "ready", JSON.stringify(v));
        break;
      }
    }
    const tune = (problem, extra) => k.api("POST", "/v1/tune", { kernel: SPEC.name, device: "cpu", problem, strategy: "exhaustive", history: "none", ...extra });
    const r = await tune({ n: 65536 }, { budget: { evaluations: BUDGET }, seed: SEED, final_remeasure: COUNT, final_rounds: ROUNDS });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    const rows = [];
    for (const U of SPEC.variants.cpu.parameters[0].values)
      for (const W of [0, 1]) rows.push(U === 3 ? { config: { U, W }, status: "compile_error" } : { config: { U, W }, status: "ok", time_ms: U_TIME[U] * (W ? 1.1 : 1) });
    const imp = await k.api("POST", "/v1/imports", { kernel: SPEC.name, device: "cpu", problem: { n: 4096 }, source: "browser test", trials: rows });
    assert.equal(imp.status, 201, JSON.stringify(imp.body));
    imported = imp.body.job.id;
    const f = await tune({ n: 1 << 22 }, { budget: { evaluations: 2 } });
    assert.equal(f.status, 202, JSON.stringify(f.body));
    job = await k.waitJob(r.body.id, { timeoutMs: 300000 });
    assert.equal(job.status, "succeeded", JSON.stringify(job));
    assert.equal(job.final_pick.state, "picked", JSON.stringify(job.final_pick));
    failed = await k.waitJob(f.body.id, { timeoutMs: 120000 });
    assert.deepEqual([failed.status, failed.stop_reason], ["failed", "no_ok_trial"], JSON.stringify(failed));
  });

  after(async () => {
    if (browser) await browser.close();
    if (k) {
      const rc = await k.stop().catch((e) => e.message);
      k.cleanup();
      assert.equal(rc, 0, "ktuned exited with " + rc + " on SIGTERM");
    }
  });

  it("shows the final pick, the search apart from it, GFLOP/s, the speed-up and the seed", async () => {
    // What the API says the page must show.
    assert.equal(job.seed, SEED, "the seed comes back as the text sent");
    const trials = (await k.api("GET", `/v1/jobs/${job.id}/trials?limit=1000`)).body.trials;
    assert.equal(trials.filter((t) => t.final_round === null).length, BUDGET);
    assert.equal(trials.filter((t) => t.final_round !== null).length, COUNT * ROUNDS);
    assert.ok(trials.some((t) => t.status === "compile_error" && /U = 3 is not supported/.test(t.extras.log || "")), "a compile log stored");
    assert.ok(trials.some((t) => t.status === "wrong_result" && t.extras.max_abs_err > 0), "a verification error stored");
    for (const [name, viewport] of Object.entries(VIEWPORTS)) {
      const page = await newPage(viewport);
      await page.goto(`${k.base}/#/jobs/${job.id}`);
      await page.waitForSelector('#job-page[data-loaded="all"]');
      // The final pick: its candidates with their rounds, and why.
      assert.equal(await page.locator("#final-table tbody tr").count(), COUNT);
      const winnerRow = page.locator(`#final-table tbody tr[data-candidate="${job.final_pick.winner}"]`);
      assert.match(await winnerRow.textContent(), /final answer/);
      const why = await page.locator("#final-why").textContent();
      assert.match(why, job.final_pick.winner === 0 ? /also the final answer/ : /differs from the search's best/);
      assert.match(await page.locator("#best-source").textContent(), new RegExp(`median of ${ROUNDS} re-measurements`));
      const rounds = await page.evaluate(() => window.Chart.getChart(document.getElementById("final-chart")).data.datasets.map((d) => d.data.length));
      assert.deepEqual(rounds, Array(COUNT).fill(ROUNDS + 1), "each candidate: its search time, then each round");
      // The search curve ends at the budget: the re-measurements are not evaluations.
      const axis = await page.evaluate(() => {
        const c = window.Chart.getChart(document.getElementById("convergence-chart"));
        return { max: c.scales.x.max, xs: c.data.datasets.flatMap((d) => d.data.map((p) => p.x)) };
      });
      assert.equal(axis.max, BUDGET);
      assert.ok(Math.max(...axis.xs) <= BUDGET, "no point past the budget: " + axis.xs);
      assert.equal(await page.locator("#trials-table tbody tr .final-round").count(), COUNT * ROUNDS);
      // GFLOP/s and the speed-up over the default (U=1, W=0: measured by this exhaustive job).
      const gflops = Number((await page.locator("#best-gflops").textContent()).replace(/,/g, ""));
      assert.ok(gflops > 0, "best GFLOP/s: " + gflops);
      // Beside it, its share of the device's peak where GET /v1/devices knows the peak, else
      // "peak unknown" in words (a host without cpufreq: no frequency, no peak; issue 31).
      const cpu = (await k.api("GET", "/v1/devices")).body.devices.find((d) => d.name === "cpu");
      await page.waitForFunction(() => document.querySelector("#best-peak")?.dataset.peak);
      const share = await page.locator("#best-peak").textContent();
      if (cpu.peak_gflops === null) assert.equal(share, "(peak unknown)");
      else assert.ok(Math.abs(parseFloat(share.slice(1)) - (100 * gflops) / cpu.peak_gflops) < 0.05 * (100 * gflops) / cpu.peak_gflops, share);
      assert.ok((await page.locator("#trials-table thead").textContent()).includes("GFLOP/s"));
      assert.match(await page.locator("#speedup").textContent(), /^\d+\.\d\d× (faster|slower) \(default /);
      // A column per parameter (the configuration's place), status and times kept.
      const heads = await page.locator("#trials-table thead th").allTextContents();
      for (const c of ["U", "W", "status", "at"]) assert.ok(heads.includes(c), heads.join("|"));
      // The seed, unrounded.
      assert.equal(await page.locator("#job-seed").textContent(), SEED);
      await page.screenshot({ path: path.join(ARTIFACTS, `job-final-${name}.png`), fullPage: true });
      // One click from a compile_error row to its log; one from a wrong_result row to its error.
      await page.locator("#trials-table tbody tr", { hasText: "compile_error" }).first().locator(".details-button").click();
      await page.waitForSelector("#trial-log");
      assert.match(await page.locator("#trial-log").textContent(), /U = 3 is not supported/);
      assert.match(await page.locator("#trial-details").textContent(), /the compiler refused this configuration/);
      await page.locator("#trial-details").screenshot({ path: path.join(ARTIFACTS, `job-log-${name}.png`) });
      await page.locator("#trials-table tbody tr", { hasText: "wrong_result" }).first().locator(".details-button").click();
      await page.waitForSelector("#trial-max-err");
      assert.ok(Number(await page.locator("#trial-max-err td").textContent()) > 0);
      await page.click("#close-details");
      assert.equal(await page.locator("#trial-details").isHidden(), true);
      await closePage(page);
    }
  });

  it("fits importance to the main effects together (a parameter travelling with the one that matters gets nothing)", () => {
    // b sets the time; a equals b in half the trials (else it varies on its own); c is noise-free filler.
    const configs = [], times = [];
    for (let i = 0; i < 200; i++) {
      const b = i % 5;
      configs.push({ a: i % 2 ? b : Math.floor(i * 2.618) % 5, b, c: i % 11 });
      times.push(Math.exp(b));
    }
    const ts = { n: 200, params: ["a", "b", "c"], configs, time: Float64Array.from(times), finalRound: new Int32Array(200) };
    const ix = new ParamIndex();
    ix.update(ts);
    const all = selectRows(ts, ix, new Map());
    const imp = importance(ix, all.rows, all.y);
    assert.deepEqual(imp.params.map((x) => x.name), ["b", "a", "c"]);
    assert.ok(imp.params[0].share > 0.999 && imp.params[1].share < 1e-6, JSON.stringify(imp.params));
    // Per-value means alone would give a a quarter of the variance here.
    const am = new Map();
    all.rows.forEach((i, k) => am.set(configs[i].a, [...(am.get(configs[i].a) || []), all.y[k]]));
    const mean = all.y.reduce((s, v) => s + v, 0) / all.y.length;
    const between = [...am.values()].reduce((s, v) => s + v.length * (v.reduce((x, y) => x + y, 0) / v.length - mean) ** 2, 0);
    assert.ok(between / all.y.reduce((s, v) => s + (v - mean) ** 2, 0) > 0.2);
    // A filter to one value of b: b explains nothing any more; c (11 values, 40 trials) is still estimable.
    const one = selectRows(ts, ix, new Map([[1, ix.keys[1].get(2)]]));
    assert.equal(one.rows.length, 40);
    assert.ok(importance(ix, one.rows, one.y).params.every((x) => x.share === 0 || x.share === null || x.share < 1e-12));
    // Too few trials for a joint fit (20 for 6 × 3 degrees of freedom): each parameter alone,
    // chance-corrected, shares within 0..1, the one that sets the time first.
    const few = { n: 20, params: ["p0", "p1", "p2", "p3", "p4", "p5"], configs: [], time: new Float64Array(20), finalRound: new Int32Array(20) };
    for (let i = 0; i < 20; i++) {
      few.configs.push(Object.fromEntries(few.params.map((q, j) => [q, Math.floor(i * (j + 1) * 1.618) % 4])));
      few.time[i] = 2 ** few.configs[i].p3;
    }
    const fx = new ParamIndex();
    fx.update(few);
    const fs_ = selectRows(few, fx, new Map());
    const fimp = importance(fx, fs_.rows, fs_.y);
    assert.equal(fimp.method, "marginal");
    assert.equal(fimp.params[0].name, "p3");
    assert.ok(fimp.params.every((x) => x.share >= 0 && x.share <= 1), JSON.stringify(fimp.params));
    // Every value seen once: not estimated (null), never a share of 1.
    const uniq = { n: 6, params: ["x"], configs: [1, 2, 3, 4, 5, 6].map((x) => ({ x })), time: Float64Array.from([1, 2, 3, 4, 5, 6]), finalRound: new Int32Array(6) };
    const ux = new ParamIndex();
    ux.update(uniq);
    const us = selectRows(uniq, ux, new Map());
    assert.equal(importance(ux, us.rows, us.y).params[0].share, null);
  });

  it("shows a column per parameter (sort, filter), importance, parallel coordinates and slices", async () => {
    const page = await newPage();
    await page.goto(`${k.base}/#/jobs/${imported}`);
    await page.waitForSelector('#job-page[data-loaded="all"]');
    const heads = await page.locator("#trials-table thead th").allTextContents();
    const col = heads.indexOf("U") + 1;
    assert.ok(col > 0 && heads.includes("W") && heads.includes("status") && heads.includes("time"), heads.join("|"));
    const us = () => page.locator(`#trials-table tbody tr td:nth-child(${col})`).allTextContents();
    // Sorted by value (numbers numerically: 8 after 6), then reversed.
    const header = page.locator("#trials-table thead th", { hasText: /^U( [▲▼])?$/ });
    await header.click();
    assert.deepEqual(await us(), ["1", "1", "2", "2", "3", "3", "4", "4", "5", "5", "6", "6", "8", "8"]);
    await header.click();
    assert.equal((await us())[0], "8");
    // Importance: U first (it alone sets the time), W a little (its 10%).
    await page.waitForSelector("#param-views[data-drawn]");
    assert.equal(await page.getAttribute("#importance-chart", "data-order"), "U,W");
    const shares = await page.evaluate(() => window.Chart.getChart(document.getElementById("importance-chart")).data.datasets[0].data);
    assert.ok(shares[0] > 95 && shares[1] > 0.1 && shares[1] < 5, "importance %: " + shares);
    // Parallel coordinates: a line per ok evaluation, the two failed ones said, the canvas drawn on.
    assert.equal(await page.getAttribute("#parallel-chart", "data-lines"), "12");
    assert.match(await page.locator("#parallel-note").textContent(), /2 failed evaluations \(no time\) not drawn/);
    const inked = await page.evaluate(() => {
      const c = document.getElementById("parallel-chart");
      const px = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 3; i < px.length; i += 4) if (px[i] > 0) n++;
      return n / (c.width * c.height);
    });
    assert.ok(inked > 0.01, "parallel coordinates drawn: " + inked);
    // A slice plot per parameter, each with every ok evaluation.
    assert.deepEqual(await page.locator("#slices .slice-chart").evaluateAll((cs) => cs.map((c) => [c.dataset.param, c.dataset.points])), [["U", "12"], ["W", "12"]]);
    // The filter (U = 4) narrows the table and every view; clearing it brings all back.
    await page.selectOption('select.param-filter[data-param="U"]', { label: "4" });
    assert.deepEqual(await us(), ["4", "4"]);
    assert.match(await page.textContent("#trials-table .pager-info"), /of 2 \(filtered from 14\)/);
    assert.equal(await page.getAttribute("#parallel-chart", "data-lines"), "2");
    assert.equal(await page.getAttribute("#slices .slice-chart[data-param=W]", "data-points"), "2");
    // U filtered to one value explains nothing; W's two trials (a value each) cannot be told from noise.
    assert.equal(await page.getAttribute("#importance-chart", "data-order"), "");
    const note = await page.textContent("#importance-note");
    assert.match(note, /W: each value seen once, not estimated\. U: one value only here, explains nothing/);
    assert.match(await page.textContent("#param-filter-note"), /Filter: U = 4 · 2 of 14 evaluations/);
    await page.locator("#param-views").screenshot({ path: path.join(ARTIFACTS, "job-params-filtered-desktop.png") });
    await page.click("#clear-filter");
    assert.equal((await us()).length, 14);
    assert.equal(await page.getAttribute("#parallel-chart", "data-lines"), "12");
    await page.evaluate(() => window.scrollTo(0, 0)); // the sticky header at the top of the shot
    await page.screenshot({ path: path.join(ARTIFACTS, "job-params-desktop.png"), fullPage: true });
    // The phone width: the same page resized (the views redraw to fit).
    await page.setViewportSize(VIEWPORTS.phone);
    await page.waitForFunction(() => document.getElementById("parallel-chart").width <= 400 * devicePixelRatio);
    await page.screenshot({ path: path.join(ARTIFACTS, "job-params-phone.png"), fullPage: true });
    await closePage(page);
  });

  it("says why a failed job failed, in words", async () => {
    for (const [name, viewport] of Object.entries(VIEWPORTS)) {
      const page = await newPage(viewport);
      await page.goto(`${k.base}/#/jobs/${failed.id}`);
      await page.waitForSelector('#job-page[data-loaded="all"]');
      const box = await page.locator("#job-failure").textContent();
      assert.match(box, /This job failed: no configuration ran correctly/);
      assert.ok(box.includes(failed.error.message), box);
      assert.ok(!box.includes('{"code"'), "no JSON blob: " + box);
      assert.equal(await page.locator("#final-pick").isHidden(), true, "a job without a final pick has no card");
      await page.screenshot({ path: path.join(ARTIFACTS, `job-failed-${name}.png`), fullPage: true });
      await closePage(page);
    }
  });
});
