// Starts and stops a real ktuned (with its embedded PostgreSQL) for the browser tests, as
// tests/integration/ktuned_fixture.py does for the Python ones, and launches Debian's chromium
// through playwright-core. Data lives in a throw-away folder under /tmp (the postgres user must be
// able to reach it), removed at the end.

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import { createInterface } from "node:readline";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
import { chromium } from "playwright-core";

const READY = /ktuned ready: dashboard http:\/\/([^/]+)\//;

export const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

// Gathers a page's errors for closePage: console errors (but those matching one of page.expected,
// regular expressions a step pushes while it provokes one), uncaught exceptions, and any request
// outside the service at base (the dashboard loads nothing from outside). Returns page.
export function watchPage(page, base) {
  page.errors = [];
  page.expected = [];
  page.on("console", (m) => {
    if (m.type() === "error" && !page.expected.some((re) => re.test(m.text()))) page.errors.push(m.text());
  });
  page.on("pageerror", (e) => page.errors.push("uncaught: " + e.message));
  page.on("request", (r) => {
    if (!r.url().startsWith(base) && !r.url().startsWith("data:")) page.errors.push("request outside the service: " + r.url());
  });
  return page;
}

// Fails the test on any error watchPage gathered, then closes the page's context.
export async function closePage(page) {
  assert.deepEqual(page.errors, [], "console errors on the page");
  await page.context().close();
}

export function launchBrowser() {
  return chromium.launch({ executablePath: process.env.KTUNE_CHROMIUM || "/usr/bin/chromium", headless: true, args: CHROMIUM_ARGS });
}

// The synthetic space of nx × ny × nz configurations: smooth times (a bowl with a ripple, so the
// per-parameter view has a shape) and, 1 in ~1,000, a failed compilation (time null).
export function syntheticTrials(nx, ny, nz) {
  const bx = Array.from({ length: nx }, (_, i) => i + 1);
  const by = Array.from({ length: ny }, (_, i) => 8 * (i + 1));
  const tile = Array.from({ length: nz }, (_, i) => i + 1);
  const trials = [];
  for (const x of bx)
    for (const y of by)
      for (const z of tile) {
        const t = 2 + ((x - nx * 0.4) / (nx * 0.2)) ** 2 + ((y - by[ny >> 1]) / (ny * 2)) ** 2 + 0.5 * Math.sin(z / 5);
        const failed = (x * 7 + y * 3 + z) % 997 === 0;
        trials.push({ config: { bx: x, by: y, tile: z }, time: failed ? null : Number(t.toFixed(6)) });
      }
  return { params: { bx, by, tile }, trials };
}

// A Kernel Tuner cache file of the synthetic space above; recorded costs are tiny so that replay
// is fast. Returns the number of configurations.
export function writeSyntheticDataset(dir, name, nx, ny, nz) {
  const { params, trials } = syntheticTrials(nx, ny, nz);
  const parts = trials.map(({ config: c, time }) => {
    const t = time === null ? '"CompilationFailedConfig"' : time.toFixed(6);
    return `"${c.bx},${c.by},${c.tile}":{"bx":${c.bx},"by":${c.by},"tile":${c.tile},"time":${t},"compile_time":0.01,"verification_time":0,"benchmark_time":0.01}`;
  });
  const head = JSON.stringify({
    space: name,
    device_name: "Synthetic GPU",
    kernel_name: "synth",
    problem_size: 1000,
    objective: "time",
    tune_params_keys: ["bx", "by", "tile"],
    tune_params: params,
    restrictions: [],
  });
  const text = head.slice(0, -1) + ',"cache":{' + parts.join(",") + "}}";
  fs.writeFileSync(path.join(dir, name + ".json.gz"), zlib.gzipSync(text, { level: 1 }));
  return parts.length;
}

export class Ktuned {
  constructor(binary, sourceDir, { extra = [], datasets = [] } = {}) {
    this.binary = binary;
    this.sourceDir = sourceDir;
    this.dataDir = fs.mkdtempSync(path.join("/tmp", "ktune-browser-"));
    fs.chmodSync(this.dataDir, 0o755);
    this.extra = extra;
    // With --api-token, GETs made without an Authorization header send it: reads need a token once
    // one exists (issue #11). Writes send only what the test passes.
    const at = extra.indexOf("--api-token");
    this.token = at >= 0 ? extra[at + 1] : null;
    this.datasets = [...datasets, path.join(sourceDir, "datasets")];
    this.proc = null;
    this.address = null;
    this.logPath = path.join(this.dataDir, "ktuned.log");
  }

  // A test database (tests/README.md, "Test databases"): kt_pg_template, beside ktuned, copies its
  // migrated template cluster in (the same tool as the Python and C fixtures); run without fsync.
  copyDbTemplate() {
    if (fs.existsSync(path.join(this.dataDir, "pg"))) return;
    const tool = path.join(path.dirname(fs.realpathSync(this.binary)), "kt_pg_template");
    if (!fs.existsSync(tool)) return; // ktuned runs initdb itself
    const r = spawnSync(tool, [this.dataDir], { encoding: "utf8" });
    if (r.status !== 0) throw new Error("kt_pg_template failed: " + r.stderr);
  }

  start(timeoutMs = 90000) {
    const args = ["--listen", "127.0.0.1:0", "--data-dir", this.dataDir, "--datasets", this.datasets.join(","), "--web-dir", path.join(this.sourceDir, "web"), ...this.extra];
    this.copyDbTemplate();
    const log = fs.openSync(this.logPath, "a");
    this.proc = spawn(this.binary, args, { stdio: ["ignore", "pipe", log], env: { ...process.env, KTUNE_PG_FSYNC: "off" } });
    fs.closeSync(log);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => fail("ktuned did not become ready in time"), timeoutMs);
      const fail = (why) => {
        clearTimeout(timer);
        if (this.proc) this.proc.kill("SIGKILL");
        reject(new Error(why + "; log:\n" + this.logTail()));
      };
      const lines = createInterface({ input: this.proc.stdout });
      lines.on("line", (line) => {
        const m = READY.exec(line);
        if (m && !this.address) {
          clearTimeout(timer);
          this.address = m[1];
          resolve(this);
        }
      });
      this.proc.on("exit", (code) => {
        if (!this.address) fail(`ktuned exited with ${code} before it was ready`);
      });
    });
  }

  get base() {
    return `http://${this.address}`;
  }

  logTail(n = 40) {
    try {
      return fs.readFileSync(this.logPath, "utf8").split("\n").slice(-n).join("\n");
    } catch {
      return "(no log)";
    }
  }

  async stop(timeoutMs = 60000) {
    if (!this.proc || this.proc.exitCode !== null) return this.proc ? this.proc.exitCode : null;
    const exited = new Promise((resolve) => this.proc.once("exit", (code) => resolve(code)));
    this.proc.kill("SIGTERM");
    let timer;
    const code = await Promise.race([exited, new Promise((r) => (timer = setTimeout(() => r("timeout"), timeoutMs)))]);
    // Cleared: a pending timer keeps node (and so the ctest) alive until it fires, a minute per test.
    clearTimeout(timer);
    if (code === "timeout") {
      this.proc.kill("SIGKILL");
      throw new Error(`ktuned did not stop within ${timeoutMs} ms`);
    }
    return code;
  }

  // Stops the embedded PostgreSQL if ktuned left it running, and removes the data folder.
  cleanup() {
    const pg = path.join(this.dataDir, "pg");
    if (fs.existsSync(path.join(pg, "postmaster.pid"))) {
      const roots = fs.existsSync("/usr/lib/postgresql") ? fs.readdirSync("/usr/lib/postgresql").sort() : [];
      const pgCtl = roots.length ? `/usr/lib/postgresql/${roots[roots.length - 1]}/bin/pg_ctl` : "pg_ctl";
      let cmd = [pgCtl, "-D", pg, "-m", "immediate", "-w", "stop"];
      if (os.userInfo().uid === 0) cmd = ["runuser", "-u", "postgres", "--", ...cmd];
      spawnSync(cmd[0], cmd.slice(1), { stdio: "ignore" });
    }
    fs.rmSync(this.dataDir, { recursive: true, force: true });
  }

  async api(method, p, body, headers = {}) {
    const auth = method === "GET" && this.token && !headers.Authorization ? { Authorization: "Bearer " + this.token } : {};
    const res = await fetch(this.base + p, {
      method,
      headers: { ...(body ? { "Content-Type": "application/json" } : {}), ...auth, ...headers },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  }

  async waitJob(id, { until = ["succeeded", "failed", "cancelled"], timeoutMs = 300000, predicate } = {}) {
    const deadline = Date.now() + timeoutMs;
    let job = null;
    while (Date.now() < deadline) {
      job = (await this.api("GET", `/v1/jobs/${id}`)).body;
      if (until.includes(job.status) || (predicate && predicate(job))) return job;
      await new Promise((r) => setTimeout(r, 200));
    }
    throw new Error(`job ${id} did not reach ${until} in ${timeoutMs} ms: ${JSON.stringify(job && job.progress)}`);
  }
}
