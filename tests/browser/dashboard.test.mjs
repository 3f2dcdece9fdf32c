// Browser tests of the dashboard: playwright-core drives Debian's chromium (headless, no sandbox,
// background networking off) against a live ktuned with its embedded PostgreSQL. The pages load
// without console errors, a job started from the page appears and its chart grows while it runs,
// cancel works (with the API token the service is started with), the start form sends every field
// of POST /v1/tune and marks a refused one, the lookup form works, the
// bench results file is shown, an exhaustive job covers its whole (4,000-configuration) space and
// finds its optimum, a 100,000-trial job (imported through POST /v1/imports: the service would take
// ten minutes to measure that many) opens in under 2 s (measured and printed; asserted by make bench
// only, KTUNE_BROWSER_TIMED=1: tests assert no time), and screenshots of
// every page at desktop and phone widths are written to the artifacts folder.
//
// Environment (ctest sets them): KTUNE_KTUNED (the ktuned binary), KTUNE_SOURCE_DIR (the
// repository), KTUNE_ARTIFACTS (where screenshots go; default <tmp>/ktune-browser-artifacts);
// KTUNE_BROWSER_TRIALS, the big job's trials: 20,000 in make test (ctest sets it), 100,000 in make bench
// and by default; KTUNE_BROWSER_TIMED=1 (make bench) asserts the time limits, which are otherwise only
// printed (make test runs this test beside others).

import { describe, it, before, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Ktuned, launchBrowser, watchPage, closePage, syntheticTrials, writeSyntheticDataset } from "./fixture.mjs";

const KTUNED = process.env.KTUNE_KTUNED;
const SOURCE = process.env.KTUNE_SOURCE_DIR || path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const ARTIFACTS = process.env.KTUNE_ARTIFACTS || path.join(os.tmpdir(), "ktune-browser-artifacts");
const TOKEN = "browser-test-token";
const AUTH = { Authorization: "Bearer " + TOKEN };
// KTUNE_BROWSER_TRIALS (a multiple of 2,000): the big job's size; make test's ctest sets 20,000.
const BIG = Number(process.env.KTUNE_BROWSER_TRIALS || 100000);
// The exhaustive job's space (50 × 40 × 2): the service measures it whole while the other tests run.
const EXHAUSTIVE = 4000;
// Trials per POST /v1/imports request (a body holds at most 1 MiB).
const IMPORT_CHUNK = 5000;
const OPEN_LIMIT_MS = 2000;
const TIMED = process.env.KTUNE_BROWSER_TIMED === "1";
const VIEWPORTS = { desktop: { width: 1366, height: 900 }, phone: { width: 390, height: 844 } };

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

describe("dashboard", { timeout: 1800000 }, () => {
  let k, browser, dsDir, readToken;
  let bigId, bigJob, exhaustiveId, exhaustivePosted;
  let liveId, cancelId;
  const shots = [];
  const timings = [];

  function note(line) {
    timings.push(line);
    console.log("# " + line);
  }

  // A page that records console errors and uncaught exceptions; `expected` lists regular
  // expressions of errors a step provokes on purpose (the 403 of a cancel with a read token).
  async function newPage(viewport = VIEWPORTS.desktop) {
    const ctx = await browser.newContext({ viewport });
    // Reads need a token once one exists: every page starts with a read-only one (the admin token is
    // typed into the token form where a step needs more).
    await ctx.addInitScript((t) => {
      // about:blank (between routes) has no storage of its own: only the dashboard's pages.
      if (location.protocol !== "http:") return;
      if (!localStorage.getItem("ktune.apiToken")) localStorage.setItem("ktune.apiToken", t);
    }, readToken);
    const page = await ctx.newPage();
    watchPage(page, k.base);
    page.on("requestfailed", (r) => {
      if (!r.url().startsWith(k.base)) page.errors.push("request outside the service: " + r.url());
    });
    return page;
  }

  async function shot(page, name) {
    const file = path.join(ARTIFACTS, name + ".png");
    await page.screenshot({ path: file, fullPage: true });
    shots.push(file);
    console.log("# screenshot " + file);
  }

  async function chartPoints(page, id, dataset = 0) {
    return page.evaluate(
      ([cid, ds]) => {
        const c = window.Chart.getChart(document.getElementById(cid));
        const d = c && c.data.datasets[ds] ? c.data.datasets[ds].data : [];
        return { n: d.length, lastX: d.length ? d[d.length - 1].x : 0 };
      },
      [id, dataset]
    );
  }

  before(async () => {
    assert.ok(KTUNED, "KTUNE_KTUNED must name the ktuned binary");
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    dsDir = fs.mkdtempSync(path.join("/tmp", "ktune-browser-ds-"));
    fs.chmodSync(dsDir, 0o755);
    assert.ok(BIG >= 2000 && BIG % 2000 === 0, "KTUNE_BROWSER_TRIALS must be a multiple of 2000");
    const n = writeSyntheticDataset(dsDir, "synth_big-SYNTH", 50, 40, BIG / 2000);
    assert.equal(n, BIG);
    assert.equal(writeSyntheticDataset(dsDir, "synth_mid-SYNTH", 50, 40, EXHAUSTIVE / 2000), EXHAUSTIVE);
    k = new Ktuned(KTUNED, SOURCE, {
      datasets: [dsDir],
      extra: ["--workers", "2", "--api-token", TOKEN, "--max-evaluations", "200000", "--replay-speed", "0"],
    });
    await k.start();
    const made = await k.api("POST", "/v1/tokens", { name: "dashboard reader", scope: "read" }, AUTH);
    assert.equal(made.status, 201, JSON.stringify(made.body));
    readToken = made.body.token;
    browser = await launchBrowser();
    // The exhaustive job runs while the other tests do; a later test checks it.
    exhaustivePosted = Date.now();
    const r = await k.api("POST", "/v1/tune", { kernel: "synth", device: "replay:synth_mid-SYNTH", strategy: "exhaustive", budget: { evaluations: EXHAUSTIVE } }, AUTH);
    assert.equal(r.status, 202, JSON.stringify(r.body));
    exhaustiveId = r.body.id;
    // The 100,000 trials of the big job, as a Kernel Tuner cache of that space would be imported.
    const importStart = Date.now();
    const { trials } = syntheticTrials(50, 40, BIG / 2000);
    for (let i = 0; i < trials.length; i += IMPORT_CHUNK) {
      const rows = trials.slice(i, i + IMPORT_CHUNK).map(({ config, time }) =>
        time === null ? { config, status: "compile_error", compile_ms: 10 } : { config, status: "ok", time_ms: time, compile_ms: 10, measure_ms: 10 }
      );
      const body = bigId ? { job: bigId, trials: rows } : { kernel: "synth", device: "replay:synth_big-SYNTH", source: "browser test", trials: rows };
      const imp = await k.api("POST", "/v1/imports", body, AUTH);
      assert.equal(imp.status, bigId ? 200 : 201, JSON.stringify(imp.body));
      assert.equal(imp.body.inserted, rows.length);
      bigId = imp.body.job.id;
    }
    const s = (Date.now() - importStart) / 1000;
    note(`${BIG.toLocaleString("en")}-trial job imported in ${s.toFixed(1)} s (${(BIG / s).toFixed(0)} trials/s, ${IMPORT_CHUNK} per request)`);
  });

  after(async () => {
    if (browser) await browser.close();
    if (k) {
      const rc = await k.stop().catch((e) => e.message);
      k.cleanup();
      assert.equal(rc, 0, "ktuned exited with " + rc + " on SIGTERM");
    }
    if (dsDir) fs.rmSync(dsDir, { recursive: true, force: true });
    if (timings.length) fs.writeFileSync(path.join(ARTIFACTS, "timings.txt"), timings.join("\n") + "\n");
    console.log("# screenshots: " + shots.length + " in " + ARTIFACTS);
  });

  it("serves Chart.js from the service and every page loads without console errors", async () => {
    const res = await fetch(k.base + "/node_modules/chart.js/dist/chart.umd.min.js");
    assert.equal(res.status, 200, "Chart.js is not served: run npm ci in web/ (make deps does)");
    const page = await newPage();
    for (const route of ["#/jobs", "#/compare", "#/best", "#/models", "#/devices", `#/jobs/${bigId}`]) {
      await page.goto(`${k.base}/${route}`);
      await page.waitForFunction(() => !document.querySelector("#view > .loading"));
      await page.waitForLoadState("networkidle").catch(() => {});
      assert.equal(await page.locator(".error-box").count(), 0, `error shown on ${route}`);
    }
    assert.equal(await page.evaluate(() => typeof window.Chart), "function");
    await closePage(page);
  });

  it("a job started from the page appears and its chart grows while it runs", async () => {
    const page = await newPage();
    await page.goto(`${k.base}/#/jobs`);
    await page.click("#token summary");
    await page.fill("#token-input", TOKEN);
    await page.click("#token-form button");
    await page.click("details.start > summary");
    await page.selectOption("#start-form select[name=kernel]", "clblast_gemm");
    await page.selectOption("#start-form select[name=device]", "replay:gemm_clblast-RTX_2080_Ti");
    await page.selectOption("#start-form select[name=strategy]", "random");
    await page.fill("#start-form input[name=evaluations]", "1000");
    await page.fill("#start-form input[name=seed]", "7");
    await page.click("#start-form button[type=submit]");
    await page.waitForSelector("#start-form .form-msg .ok");
    liveId = Number((await page.textContent("#start-form .form-msg .ok")).match(/job (\d+)/)[1]);
    const row = page.locator(`#jobs-table tr[data-id="${liveId}"]`);
    await row.waitFor();
    assert.match(await row.textContent(), /gemm/);

    const eventReplies = [];
    page.on("response", (r) => {
      if (r.url().includes(`/v1/jobs/${liveId}/events?`)) eventReplies.push(r.status());
    });
    await page.goto(`${k.base}/#/jobs/${liveId}`);
    await page.waitForFunction(() => {
      const c = window.Chart && window.Chart.getChart(document.getElementById("convergence-chart"));
      return c && c.data.datasets[0].data.length > 0;
    });
    // Live by Server-Sent Events (GET /v1/jobs/{id}/events), not by polling.
    await page.waitForSelector('#job-page[data-live="events"]');
    // The best-so-far line ends at the latest trial: its x grows while the job runs.
    const seen = [];
    let grew = false;
    for (let i = 0; i < 60 && !grew; i++) {
      const p = await chartPoints(page, "convergence-chart");
      const job = (await k.api("GET", `/v1/jobs/${liveId}`)).body;
      seen.push(p.lastX);
      if (seen.length > 1 && p.lastX > seen[0] && job.status === "running") grew = true;
      await sleep(500);
    }
    note(`live job ${liveId}: convergence chart's last x went ${seen[0]} -> ${seen[seen.length - 1]} while running, ${eventReplies.length} events replies`);
    assert.ok(grew, "the convergence chart did not grow while the job ran: " + seen.join(","));
    assert.ok(eventReplies.length >= 2 && eventReplies.every((st) => st === 200), "events replies: " + eventReplies.join(","));
    assert.equal(await page.getAttribute("#job-page", "data-live"), "events", "the page fell back to polling");
    await k.waitJob(liveId, { timeoutMs: 600000 });
    await page.waitForSelector("#job-page[data-loaded=all]", { timeout: 30000 });
    const job = (await k.api("GET", `/v1/jobs/${liveId}`)).body;
    assert.equal(job.status, "succeeded");
    assert.match(await page.textContent("#trials-table .pager-info"), new RegExp(`of ${job.progress.trials.toLocaleString("en")}`));
    assert.equal(await page.textContent("#best-config"), JSON.stringify(job.best.config, null, 2));
    // The warm start and the toolchain of the job are shown as the API gives them.
    const fields = await page.textContent("#job-page .fields");
    assert.match(fields, new RegExp(`warm start${job.history.mode === "auto" ? "auto: " + job.history.seeded + " seeded" : "none"}`));
    assert.ok(fields.includes("toolchain" + job.toolchain), fields);
    await closePage(page);
  });

  it("cancel needs a token of scope tune and works with it", async () => {
    const r = await k.api("POST", "/v1/tune", { kernel: "pnpoly", device: "replay:pnpoly_kt-RTX_3090", strategy: "random", budget: { evaluations: 4000 }, seed: 3 }, AUTH);
    assert.equal(r.status, 202);
    cancelId = r.body.id;
    const page = await newPage();
    await page.goto(`${k.base}/#/jobs`);
    const button = page.locator(`#jobs-table tr[data-id="${cancelId}"] button.cancel`);
    await button.waitFor();
    // With the read-only token every page starts with: the service answers 403 and the page says so.
    page.expected.push(/status of 403/);
    await button.click();
    await page.waitForSelector("#jobs-action-msg .error-box");
    assert.match(await page.textContent("#jobs-action-msg .error-box"), /forbidden/);
    page.expected.pop();
    await page.click("#token summary");
    await page.fill("#token-input", TOKEN);
    await page.click("#token-form button");
    await page.locator(`#jobs-table tr[data-id="${cancelId}"] button.cancel`).click();
    await page.waitForSelector(`#jobs-table tr[data-id="${cancelId}"][data-status=cancelled]`, { timeout: 15000 });
    const job = (await k.api("GET", `/v1/jobs/${cancelId}`)).body;
    assert.equal(job.status, "cancelled");
    await closePage(page);
  });

  it("the start form takes what POST /v1/tune takes, checks it as the API does and shows refusals at their field", async () => {
    const page = await newPage();
    await page.goto(`${k.base}/#/jobs`);
    await page.click("#token summary");
    await page.fill("#token-input", TOKEN);
    await page.click("#token-form button");
    await page.click("details.start > summary");
    // The CPU gemm's problem arguments become fields, with the bounds GET /v1/kernels gives.
    const kernels = (await k.api("GET", "/v1/kernels")).body.kernels;
    const cpu = kernels.find((x) => x.name === "gemm").devices.find((d) => d.device === "cpu");
    await page.selectOption("#start-form select[name=kernel]", "gemm");
    await page.selectOption("#start-form select[name=device]", "cpu");
    const m = cpu.problem_arguments.find((a) => a.name === "M");
    const mInput = page.locator('#start-form input[name="problem.M"]');
    assert.equal(await mInput.getAttribute("max"), String(m.max));
    assert.equal(await page.locator("#start-problem input").count(), cpu.problem_arguments.length);
    // Out of bounds: refused in the page, nothing sent, the field marked.
    await mInput.fill(String(m.max + 1));
    await page.click("#start-form button[type=submit]");
    await page.waitForSelector("#start-form .form-msg .error-box");
    assert.match(await page.textContent("#start-form .form-msg"), new RegExp(`problem\\.M: must be at most ${m.max}`));
    assert.equal(await mInput.getAttribute("aria-invalid"), "true");
    // A replay job with strategy options, a time budget, a seed above 2^53, no warm start, parallel 2.
    await page.selectOption("#start-form select[name=kernel]", "pnpoly");
    await page.selectOption("#start-form select[name=device]", "replay:pnpoly_kt-RTX_3090");
    await page.selectOption("#start-form select[name=strategy]", "anneal");
    const anneal = (await k.api("GET", "/v1/strategies")).body.strategies.find((x) => x.name === "anneal");
    assert.equal(await page.locator("#start-options [data-path]").count(), Object.keys(anneal.options).length);
    // A start state the space does not have: the service refuses, naming the option, and the page marks it.
    await page.fill('#start-form [name="strategy_options.start"]', '{"nope": 1}');
    page.expected.push(/status of 400/);
    await page.click("#start-form button[type=submit]");
    await page.waitForSelector("#start-form .form-msg .error-box >> text=/not a configuration of the space/");
    page.expected.pop();
    assert.equal(await page.locator('#start-form [name="strategy_options.start"]').getAttribute("aria-invalid"), "true");
    await page.fill('#start-form [name="strategy_options.start"]', "");
    await page.fill('#start-form [name="strategy_options.t0"]', "2.5");
    await page.fill("#start-form input[name=evaluations]", "12");
    await page.fill("#start-form input[name=seconds]", "900");
    await page.fill("#start-form input[name=seed]", "9007199254740993");
    await page.selectOption("#start-form select[name=history]", "none");
    await page.fill('#start-form input[name="parallel"]', "2");
    await page.click("#start-form button[type=submit]");
    await page.waitForSelector("#start-form .form-msg .ok");
    const id = Number((await page.textContent("#start-form .form-msg .ok")).match(/job (\d+)/)[1]);
    const raw = await (await fetch(`${k.base}/v1/jobs/${id}`, { headers: AUTH })).text();
    assert.match(raw, /"seed":\s*"?9007199254740993"?[,}]/, "the seed was rounded on the way: " + raw.slice(0, 300));
    const job = JSON.parse(raw);
    assert.equal(job.strategy, "anneal");
    assert.equal(job.strategy_options.t0, 2.5);
    assert.deepEqual([job.budget.evaluations, job.budget.seconds], [12, 900]);
    assert.equal(job.history.mode, "none");
    assert.equal(job.parallel, 2);
    await k.waitJob(id, { timeoutMs: 120000 });
    await closePage(page);
  });

  it("the lookup form calls /v1/best", async () => {
    const page = await newPage();
    await page.goto(`${k.base}/#/best`);
    await page.waitForSelector("#lookup-form");
    await page.selectOption("#lookup-kernel", "clblast_gemm");
    await page.selectOption("#lookup-device", "replay:gemm_clblast-RTX_2080_Ti");
    await page.click("#lookup-form button[type=submit]");
    await page.waitForSelector('#lookup-result [data-found="yes"]');
    const best = (await k.api("GET", "/v1/best?kernel=clblast_gemm&device=replay:gemm_clblast-RTX_2080_Ti&problem_size=4096,4096")).body;
    const text = await page.textContent("#lookup-result");
    assert.ok(text.includes(JSON.stringify(best.config, null, 2)), "the page shows the best configuration");
    assert.ok(text.includes(`job #${best.job_id}`));
    // The answer links to the job and trial that measured it (issue 31), and its export buttons
    // download what the server renders (GET /v1/best?...&format=header: ktune best's renderer).
    assert.equal(await page.getAttribute("#lookup-result a.measured-by", "href"), `#/jobs/${best.job_id}?trial=${best.trial_id}`);
    const served = await (await fetch(`${k.base}/v1/best?kernel=clblast_gemm&device=replay:gemm_clblast-RTX_2080_Ti&problem_size=4096,4096&format=header`, { headers: AUTH })).text();
    assert.ok(served.includes(`(job ${best.job_id}, trial ${best.trial_id})`) && served.includes("#define KTUNE_"), served);
    const [header] = await Promise.all([page.waitForEvent("download"), page.click('#lookup-export button[data-format="header"]')]);
    assert.equal(fs.readFileSync(await header.path(), "utf8"), served);
    // Nothing known for convolution yet: the page shows the service's no_best error.
    page.expected.push(/status of 404/);
    await page.selectOption("#lookup-kernel", "convolution");
    await page.click("#lookup-form button[type=submit]");
    await page.waitForSelector('#lookup-result [data-found="no"]');
    assert.match(await page.textContent("#lookup-result"), /no_best/);
    page.expected.pop();
    // The best table lists the gemm entry and its search finds it.
    await page.fill("#best-search", "gemm");
    await page.waitForFunction(() => /of [1-9]/.test(document.querySelector("#best-table .pager-info").textContent));
    // Every entry links to its job and trial; the link opens that trial's details on the job page,
    // whose Kernel Tuner cache button downloads the server's export of the job.
    const entry = page.locator("#best-table a.measured-by").first();
    const [, entryJob, entryTrial] = /^#\/jobs\/(\d+)\?trial=(\d+)$/.exec(await entry.getAttribute("href"));
    await entry.click();
    await page.waitForSelector(`#trial-details[data-trial-id="${entryTrial}"]:not([hidden])`);
    const cache = await (await fetch(`${k.base}/v1/jobs/${entryJob}/export?format=kerneltuner`, { headers: AUTH })).text();
    assert.equal(JSON.parse(cache).ktune.job, Number(entryJob));
    const [file] = await Promise.all([page.waitForEvent("download"), page.click('#job-export button[data-format="kerneltuner"]')]);
    assert.equal(fs.readFileSync(await file.path(), "utf8"), cache);
    assert.match(file.suggestedFilename(), new RegExp(`^ktune_job${entryJob}_.*_kerneltuner\\.json$`));
    await closePage(page);
  });

  it("a job whose trials carry user metrics shows the best's values and a column per metric", async () => {
    // An ask/tell job (issue 27): three trials told with metrics, one failed without.
    const space = { parameters: [{ name: "A", values: [1, 2, 3, 4] }] };
    const made = await k.api("POST", "/v1/tune", { kernel: "metrics_view", device: "external", device_class: "browser-class", space, strategy: "exhaustive", budget: { evaluations: 4 }, history: "none", parallel: 4 }, AUTH);
    assert.equal(made.status, 202, JSON.stringify(made.body));
    const id = made.body.id;
    const asked = await k.api("POST", `/v1/jobs/${id}/ask`, { n: 4 }, AUTH);
    assert.equal(asked.status, 200, JSON.stringify(asked.body));
    assert.equal(asked.body.trials.length, 4);
    const times = [4, 1, 2];
    const trials = asked.body.trials.map((t, i) =>
      i < 3 ? { id: t.id, status: "ok", time_ms: times[i], metrics: { gflops: 100 / times[i], "GB/s": 10 * (i + 1) } } : { id: t.id, status: "runtime_error" });
    const told = await k.api("POST", `/v1/jobs/${id}/tell`, { trials }, AUTH);
    assert.equal(told.status, 200, JSON.stringify(told.body));
    const page = await newPage();
    await page.goto(`${k.base}/#/jobs/${id}`);
    await page.waitForSelector("#best-metrics .field");
    const labels = await page.locator("#best-metrics .label").allTextContents();
    const values = await page.locator("#best-metrics .value").allTextContents();
    // The best is the 1 ms trial (the metrics in the order the service stores them).
    assert.deepEqual(Object.fromEntries(labels.map((l, i) => [l, values[i]])), { gflops: "100", "GB/s": "20" });
    const heads = await page.locator("#trials-table thead th").allTextContents();
    assert.ok(heads.includes("gflops") && heads.includes("GB/s"), heads.join("|"));
    const col = heads.indexOf("gflops");
    const cells = await page.locator(`#trials-table tbody tr td:nth-child(${col + 1})`).allTextContents();
    assert.deepEqual(cells.slice().sort(), ["100", "25", "50", "–"].sort());
    assert.equal(await page.textContent("#job-page .objective-field .value"), "minimise the time");
    // The same tells under a job maximising GB/s (issue 27): its best is the 2 ms trial (30 GB/s),
    // not the fastest, and the page says what the job optimises.
    const made2 = await k.api("POST", "/v1/tune", { kernel: "metrics_view", device: "external", device_class: "browser-class", space, strategy: "exhaustive", budget: { evaluations: 4 }, history: "none", parallel: 4, objective: { metric: "GB/s", goal: "max" } }, AUTH);
    assert.equal(made2.status, 202, JSON.stringify(made2.body));
    const asked2 = await k.api("POST", `/v1/jobs/${made2.body.id}/ask`, { n: 4 }, AUTH);
    const trials2 = asked2.body.trials.map((t, i) => ({ ...trials[i], id: t.id }));
    assert.equal((await k.api("POST", `/v1/jobs/${made2.body.id}/tell`, { trials: trials2 }, AUTH)).status, 200);
    await page.goto(`${k.base}/#/jobs/${made2.body.id}`);
    await page.waitForFunction(() => /^GB\/s 30 /.test(document.querySelector("#best-time").textContent));
    assert.equal(await page.textContent("#job-page .objective-field .value"), "maximise GB/s");
    await closePage(page);
  });

  it("compare overlays jobs and shows a ktune bench results file", async () => {
    const page = await newPage();
    await page.goto(`${k.base}/#/compare?jobs=${liveId},${cancelId}`);
    await page.waitForFunction(() => {
      const c = window.Chart && window.Chart.getChart(document.getElementById("compare-chart"));
      return c && c.data.datasets.length === 2 && c.data.datasets.every((d) => d.data.length > 0);
    });
    // "Evaluations to within x%" (issue 31): per job, the first search evaluation whose best so far
    // is within x% of the best either job found, from the jobs' own trials.
    const bests = [];
    for (const id of [liveId, cancelId]) {
      const pg = (await k.api("GET", `/v1/jobs/${id}/trials?format=compact&limit=100000`)).body;
      const at = (f) => pg.fields.indexOf(f);
      let best = Infinity;
      bests.push({ id, curve: pg.rows.filter((r) => !r[at("final_round")]).map((r) => (best = r[at("status")] === "ok" && r[at("time_ms")] < best ? r[at("time_ms")] : best)) });
    }
    const bestAll = Math.min(...bests.map((b) => b.curve[b.curve.length - 1] ?? Infinity));
    for (const x of [5, 1]) {
      if (x !== 5) await page.selectOption("#compare-within-x", String(x));
      const want = bests.map((b) => [String(b.id), String(b.curve.findIndex((v) => v <= bestAll * (1 + x / 100)) + 1 || "")]);
      await page.waitForFunction((w) => {
        const rows = [...document.querySelectorAll("#compare-within-table tbody tr")].map((tr) => [tr.dataset.job, tr.dataset.evals]);
        return JSON.stringify(rows) === JSON.stringify(w);
      }, want);
      for (const [id, evals] of want) {
        const words = await page.textContent(`#compare-within-table tr[data-job="${id}"] .within-evals`);
        assert.ok(evals ? words.startsWith(`${evals} of `) : words.startsWith("not reached in "), words);
      }
    }
    await page.setInputFiles("#bench-file", path.join(SOURCE, "tests/bench/results/gpu-spaces.json"));
    await page.waitForSelector("#bench-section[data-loaded=all]");
    const strategies = JSON.parse(fs.readFileSync(path.join(SOURCE, "tests/bench/results/gpu-spaces.json"), "utf8")).averages;
    const n = await page.evaluate(() => window.Chart.getChart(document.getElementById("bench-chart")).data.datasets.length);
    assert.equal(n, Object.keys(strategies).length);
    assert.equal(await page.locator("#bench-table tbody tr").count(), Object.keys(strategies).length);
    await closePage(page);
  });

  it(`an exhaustive job measures its whole ${EXHAUSTIVE.toLocaleString("en")}-configuration space and finds its optimum`, async () => {
    const job = await k.waitJob(exhaustiveId, { timeoutMs: 900000 });
    const produced = (Date.now() - exhaustivePosted) / 1000;
    note(`${EXHAUSTIVE.toLocaleString("en")}-trial exhaustive job produced by the service in ${produced.toFixed(1)} s (${(EXHAUSTIVE / produced).toFixed(0)} trials/s, replay speed 0, 2 workers)`);
    assert.equal(job.status, "succeeded", JSON.stringify(job));
    assert.equal(job.progress.trials, EXHAUSTIVE);
    const fastest = Math.min(...syntheticTrials(50, 40, EXHAUSTIVE / 2000).trials.filter((t) => t.time !== null).map((t) => t.time));
    assert.equal(job.best.time_ms, fastest, JSON.stringify(job.best));
  });

  it(`a ${BIG.toLocaleString("en")}-trial job opens in under ${OPEN_LIMIT_MS} ms and stays responsive`, async () => {
    bigJob = await k.waitJob(bigId, { timeoutMs: 60000 });
    assert.equal(bigJob.status, "succeeded", JSON.stringify(bigJob));
    assert.equal(bigJob.progress.trials, BIG);

    const page = await newPage();
    const opens = [];
    for (let attempt = 0; attempt < 3; attempt++) {
      await page.goto("about:blank");
      await page.goto(`${k.base}/#/jobs/${bigId}`);
      await page.waitForSelector("#job-page[data-loaded=all]", { timeout: 60000 });
      const t = await page.evaluate(() => window.ktuneTimings);
      assert.equal(t.jobTrials, BIG);
      opens.push(t.jobLoaded);
    }
    note(`${BIG.toLocaleString("en")}-trial job page open (navigation start -> charts and table drawn with all trials): ${opens.map((x) => x.toFixed(0) + " ms").join(", ")}`);
    // Three opens, each a fresh navigation; the median is asserted (all three are printed).
    const median = [...opens].sort((a, b) => a - b)[1];
    if (TIMED)
      assert.ok(median < OPEN_LIMIT_MS, `opening took ${opens.map((x) => x.toFixed(0)).join(", ")} ms`);
    assert.match(await page.textContent("#trials-table .pager-info"), new RegExp("of " + BIG.toLocaleString("en")));
    const drawn = await chartPoints(page, "convergence-chart", 1);
    assert.ok(drawn.n > 100 && drawn.n <= 5000, "trials decimated for the chart: " + drawn.n);

    // Responsive: sorting 100,000 rows and redrawing against time happen within one handler each.
    const sortMs = await page.evaluate(() => {
      const th = [...document.querySelectorAll("#trials-table th")].find((x) => x.textContent.startsWith("time"));
      const t = performance.now();
      th.click();
      return performance.now() - t;
    });
    const first = await page.textContent("#trials-table tbody tr:first-child");
    const fastest = String(Number(bigJob.best.time_ms.toPrecision(4))) + " ms";
    assert.ok(first.includes(fastest), `sorted by time, the fastest trial (${fastest}) comes first: ${first}`);
    const redrawMs = await page.evaluate(() => {
      const sel = document.getElementById("x-mode");
      const t = performance.now();
      sel.value = "time";
      sel.dispatchEvent(new Event("change"));
      return performance.now() - t;
    });
    note(`${BIG.toLocaleString("en")}-trial job: sort the trials table ${sortMs.toFixed(0)} ms, redraw the charts against time ${redrawMs.toFixed(0)} ms`);
    if (TIMED)
      assert.ok(sortMs < 1000 && redrawMs < 1000);
    await page.evaluate(() => {
      const sel = document.getElementById("x-mode");
      sel.value = "evals";
      sel.dispatchEvent(new Event("change"));
    });
    await closePage(page);
  });

  it("screenshots of every page with real data, desktop and phone", async () => {
    const routes = [
      ["jobs", "#/jobs", "#jobs-table tbody tr[data-id]"],
      ["job-live", `#/jobs/${liveId}`, "#job-page[data-loaded=all]"],
      ["job-big", `#/jobs/${bigId}`, "#job-page[data-loaded=all]"],
      ["compare", `#/compare?jobs=${liveId},${cancelId}`, "#compare-chart"],
      ["best", "#/best", "#best-table tbody tr"],
      ["models", "#/models", "#models-table tbody tr"],
      ["devices", "#/devices", "#devices-table tbody tr"],
    ];
    for (const [vp, size] of Object.entries(VIEWPORTS)) {
      const page = await newPage(size);
      for (const [name, route, ready] of routes) {
        await page.goto("about:blank");
        await page.goto(`${k.base}/${route}`);
        await page.waitForSelector(ready);
        if (name === "devices") {
          // The peak column shows GET /v1/devices' peak_gflops, "unknown" where it is null.
          const devs = await (await fetch(`${k.base}/v1/devices`, { headers: AUTH })).json();
          for (const d of devs.devices) {
            const cell = page.locator(`#devices-table tbody tr[data-device="${d.name}"] td[data-peak]`);
            assert.equal(await cell.getAttribute("data-peak"), d.peak_gflops == null ? "" : String(d.peak_gflops), d.name);
            if (d.peak_gflops == null) assert.equal((await cell.textContent()).trim(), "unknown", d.name);
            else assert.match(await cell.textContent(), /GFLOP\/s$/, d.name);
          }
          assert.ok(devs.devices.some((d) => d.peak_gflops > 0), "some device (accel) knows its peak");
        }
        if (name === "compare") {
          await page.setInputFiles("#bench-file", path.join(SOURCE, "tests/bench/results/gpu-spaces.json"));
          await page.waitForSelector("#bench-section[data-loaded=all]");
        }
        if (name === "best") {
          await page.selectOption("#lookup-kernel", "clblast_gemm");
          await page.click("#lookup-form button[type=submit]");
          await page.waitForSelector('#lookup-result [data-found="yes"]');
        }
        await page.waitForLoadState("networkidle").catch(() => {});
        await shot(page, `${name}-${vp}`);
      }
      await closePage(page);
    }
    assert.equal(shots.length, routes.length * Object.keys(VIEWPORTS).length);
  });
});
