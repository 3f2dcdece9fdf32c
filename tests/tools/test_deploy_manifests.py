#!/usr/bin/env python3
"""Checks the deployment files (deploy/k8s/*.yaml, deploy/compose.yaml, Dockerfile,
deploy/Dockerfile.cuda) for what a cluster would only report at apply or run time.

No Kubernetes schema validator is packaged in Debian 12 (no kubeconform, kubeval or k8s JSON schemas),
so the structure is checked here, with python3-yaml:

- every document parses; apiVersion/kind are a known pair; metadata.name (and, for namespaced kinds,
  metadata.namespace naming the Namespace object) are set; required spec fields of each kind exist;
- workloads: selector.matchLabels is a subset of the pod template's labels; containers have a name,
  an image and resources; every volumeMount names a volume or claim template; every configMapRef,
  secretRef, configMapKeyRef/secretKeyRef (and its key), configMap/secret/PVC volume names an object
  defined here; every Service selects some workload's pods and its targetPorts are ports of those
  containers; a StatefulSet's serviceName is a headless Service; probe ports are container ports;
- ktuned containers (images ktune / ktune-cuda): `--role api|worker|all` in args, readiness and
  liveness probes on /healthz, and every KTUNE_* variable (env, and the keys of the ConfigMaps and
  Secrets they load) and every flag is a real ktuned setting (service/core/config.c's table);
- a GPU worker DaemonSet on the ktune-cuda image with resources.limits nvidia.com/gpu, a nodeSelector
  and a toleration for the GPU taint;
- kustomization.yaml lists exactly the manifest files of the folder, and its images are used;
- images: every ktune image named (k8s and compose) is built by a Dockerfile (its
  org.opencontainers.image.title label); the Dockerfiles' COPY sources exist in the repository and the
  binaries copied from the build stage are add_executable targets of CMakeLists.txt, as are the
  `--target`s built;
- compose: depends_on names services; ktune services pass --role and real KTUNE_* variables.

Then it breaks copies of the files in known ways and checks that each break is reported (the check
can fail). Run: python3 tests/tools/test_deploy_manifests.py [--root <repo>]
"""
import argparse
import os
import re
import shutil
import sys
import tempfile

import yaml

ROLES = {"api", "worker", "all"}

KINDS = {
    "Namespace": ("v1", False),
    "ConfigMap": ("v1", True),
    "Secret": ("v1", True),
    "Service": ("v1", True),
    "PersistentVolumeClaim": ("v1", True),
    "Deployment": ("apps/v1", True),
    "DaemonSet": ("apps/v1", True),
    "StatefulSet": ("apps/v1", True),
}
WORKLOADS = {"Deployment", "DaemonSet", "StatefulSet"}
KTUNE_IMAGES = {"ktune", "ktune-cuda"}
DOCKERFILES = ["Dockerfile", "deploy/Dockerfile.cuda"]


def image_name(image):
    """ktune, registry.example/x/ktune:1.2 -> ktune; postgres:15 -> postgres."""
    last = image.split("/")[-1]
    return last.split("@")[0].split(":")[0]


def ktuned_settings(root):
    """{flag: env} from config.c's option table: its CFG_<KIND>("--flag", ...) rows, each flag's
    environment twin named as config.c's env_name names it ("--max-jobs" -> KTUNE_MAX_JOBS)."""
    text = open(os.path.join(root, "service/core/config.c")).read()
    flags = re.findall(r'\bCFG_(?:STRING|BOOL|INT|LLONG|DOUBLE)\(\s*"(--[a-z0-9-]+)"', text)
    if not flags:
        raise SystemExit("FAIL: no option rows found in service/core/config.c (the table's shape changed?)")
    return {f: "KTUNE_" + f[2:].replace("-", "_").upper() for f in flags}


def cmake_targets(root):
    text = open(os.path.join(root, "CMakeLists.txt")).read()
    return set(re.findall(r"add_executable\(\s*([A-Za-z0-9_.+-]+)", text))


def load_k8s(kdir):
    """[(file, doc)] of every YAML document of every *.yaml but kustomization.yaml."""
    docs = []
    for name in sorted(os.listdir(kdir)):
        if not name.endswith((".yaml", ".yml")) or name == "kustomization.yaml":
            continue
        with open(os.path.join(kdir, name)) as f:
            for doc in yaml.safe_load_all(f):
                if doc is not None:
                    docs.append((name, doc))
    return docs


def pod_spec(doc):
    return (((doc.get("spec") or {}).get("template") or {}).get("spec")) or {}


def pod_labels(doc):
    return ((((doc.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("labels")) or {}


def container_ports(c):
    names, numbers = set(), set()
    for p in c.get("ports") or []:
        if "name" in p:
            names.add(p["name"])
        if "containerPort" in p:
            numbers.add(p["containerPort"])
    return names, numbers


def port_ok(port, names, numbers):
    return port in names if isinstance(port, str) else port in numbers


class Checker:
    def __init__(self, root):
        self.root = root
        self.errors = []

    def err(self, where, msg):
        self.errors.append("%s: %s" % (where, msg))

    # --- Kubernetes -------------------------------------------------------------------------------
    def check_k8s(self):
        kdir = os.path.join(self.root, "deploy/k8s")
        try:
            docs = load_k8s(kdir)
        except yaml.YAMLError as e:
            self.err("deploy/k8s", "YAML does not parse: %s" % e)
            return
        if not docs:
            self.err("deploy/k8s", "no manifests")
            return
        settings = ktuned_settings(self.root)
        envs = set(settings.values())
        objs = {}
        namespaces = set()
        for fname, d in docs:
            where = "%s: %s/%s" % (fname, d.get("kind"), (d.get("metadata") or {}).get("name"))
            kind, api = d.get("kind"), d.get("apiVersion")
            if kind not in KINDS:
                self.err(where, "unknown kind %r" % kind)
                continue
            if api != KINDS[kind][0]:
                self.err(where, "apiVersion %r, expected %r" % (api, KINDS[kind][0]))
            name = (d.get("metadata") or {}).get("name")
            if not name:
                self.err(where, "metadata.name missing")
                continue
            if kind == "Namespace":
                namespaces.add(name)
            key = (kind, name)
            if key in objs:
                self.err(where, "defined twice")
            objs[key] = (fname, d)
        for (kind, name), (fname, d) in objs.items():
            where = "%s: %s/%s" % (fname, kind, name)
            if KINDS[kind][1] and d["metadata"].get("namespace") not in namespaces:
                self.err(where, "metadata.namespace %r is not a Namespace defined here"
                         % d["metadata"].get("namespace"))
            if kind in ("ConfigMap", "Secret"):
                for key in list(d.get("data") or {}) + list(d.get("stringData") or {}):
                    if key.startswith("KTUNE_") and key not in envs:
                        self.err(where, "key %r is not a ktuned setting" % key)
        workloads = {k: v for k, v in objs.items() if k[0] in WORKLOADS}
        for (kind, name), (fname, d) in workloads.items():
            self.check_workload("%s: %s/%s" % (fname, kind, name), kind, d, objs, envs, settings)
        for (kind, name), (fname, d) in objs.items():
            if kind == "Service":
                self.check_service("%s: Service/%s" % (fname, name), d, workloads)
        self.check_gpu(workloads)
        self.check_kustomization(kdir, docs)

    def ref_exists(self, where, objs, kind, name, key=None):
        if (kind, name) not in objs:
            self.err(where, "%s %r is not defined in deploy/k8s" % (kind, name))
            return
        if key is not None:
            d = objs[(kind, name)][1]
            keys = set(d.get("data") or {}) | set(d.get("stringData") or {})
            if key not in keys:
                self.err(where, "%s %r has no key %r" % (kind, name, key))

    def ref_keys(self, objs, kind, name):
        if (kind, name) not in objs:
            return set()
        d = objs[(kind, name)][1]
        return set(d.get("data") or {}) | set(d.get("stringData") or {})

    def check_workload(self, where, kind, d, objs, envs, settings):
        spec = d.get("spec") or {}
        match = (spec.get("selector") or {}).get("matchLabels") or {}
        labels = pod_labels(d)
        if not match:
            self.err(where, "spec.selector.matchLabels missing")
        for k, v in match.items():
            if labels.get(k) != v:
                self.err(where, "selector %s=%s does not match the pod template's labels" % (k, v))
        if kind == "StatefulSet":
            svc = objs.get(("Service", spec.get("serviceName")))
            if not svc:
                self.err(where, "serviceName %r is not a Service defined here" % spec.get("serviceName"))
            elif (svc[1].get("spec") or {}).get("clusterIP") != "None":
                self.err(where, "serviceName %r is not headless (clusterIP: None)" % spec.get("serviceName"))
        ps = pod_spec(d)
        containers = ps.get("containers") or []
        if not containers:
            self.err(where, "no containers")
        volumes = {}
        for v in ps.get("volumes") or []:
            volumes[v.get("name")] = v
            if "configMap" in v:
                self.ref_exists(where, objs, "ConfigMap", v["configMap"].get("name"))
            if "secret" in v:
                self.ref_exists(where, objs, "Secret", v["secret"].get("secretName"))
            if "persistentVolumeClaim" in v:
                self.ref_exists(where, objs, "PersistentVolumeClaim",
                                v["persistentVolumeClaim"].get("claimName"))
        claims = {((t.get("metadata") or {}).get("name")) for t in spec.get("volumeClaimTemplates") or []}
        for c in containers:
            cw = "%s container %r" % (where, c.get("name"))
            if not c.get("name") or not c.get("image"):
                self.err(cw, "name and image are required")
                continue
            if not c.get("resources"):
                self.err(cw, "no resources (requests/limits)")
            for m in c.get("volumeMounts") or []:
                if m.get("name") not in volumes and m.get("name") not in claims:
                    self.err(cw, "volumeMount %r names no volume or volumeClaimTemplate" % m.get("name"))
            names, numbers = container_ports(c)
            loaded = []
            for ef in c.get("envFrom") or []:
                if "configMapRef" in ef:
                    self.ref_exists(cw, objs, "ConfigMap", ef["configMapRef"].get("name"))
                    loaded += self.ref_keys(objs, "ConfigMap", ef["configMapRef"].get("name"))
                if "secretRef" in ef:
                    self.ref_exists(cw, objs, "Secret", ef["secretRef"].get("name"))
                    loaded += self.ref_keys(objs, "Secret", ef["secretRef"].get("name"))
            env_names = []
            for e in c.get("env") or []:
                env_names.append(e.get("name"))
                vf = e.get("valueFrom") or {}
                if "configMapKeyRef" in vf:
                    self.ref_exists(cw, objs, "ConfigMap", vf["configMapKeyRef"].get("name"),
                                    vf["configMapKeyRef"].get("key"))
                if "secretKeyRef" in vf:
                    self.ref_exists(cw, objs, "Secret", vf["secretKeyRef"].get("name"),
                                    vf["secretKeyRef"].get("key"))
            for probe_name in ("readinessProbe", "livenessProbe", "startupProbe"):
                probe = c.get(probe_name)
                if probe and "httpGet" in probe:
                    port = probe["httpGet"].get("port")
                    if not port_ok(port, names, numbers):
                        self.err(cw, "%s port %r is not a port of the container" % (probe_name, port))
            if image_name(c["image"]) in KTUNE_IMAGES:
                self.check_ktuned(cw, c, loaded + env_names, envs, settings)

    def check_ktuned(self, cw, c, env_names, envs, settings):
        args = [str(a) for a in (c.get("args") or [])]
        if "--role" not in args or args.index("--role") + 1 >= len(args) \
                or args[args.index("--role") + 1] not in ROLES:
            self.err(cw, "ktuned needs --role api|worker|all in args, got %r" % args)
        for a in args:
            if a.startswith("--") and a.split("=")[0] not in settings:
                self.err(cw, "flag %r is not a ktuned setting" % a)
        for e in env_names:
            if e.startswith("KTUNE_") and e not in envs:
                self.err(cw, "environment variable %r is not a ktuned setting" % e)
        for probe_name in ("readinessProbe", "livenessProbe"):
            path = ((c.get(probe_name) or {}).get("httpGet") or {}).get("path")
            if path != "/healthz":
                self.err(cw, "%s must be an httpGet on /healthz (got %r)" % (probe_name, path))

    def check_service(self, where, d, workloads):
        spec = d.get("spec") or {}
        sel = spec.get("selector") or {}
        if not sel:
            self.err(where, "no selector")
            return
        ns = d["metadata"].get("namespace")
        matched = [w for w in workloads.values()
                   if w[1]["metadata"].get("namespace") == ns
                   and all(pod_labels(w[1]).get(k) == v for k, v in sel.items())]
        if not matched:
            self.err(where, "selector %r matches no workload's pods" % sel)
            return
        if not spec.get("ports"):
            self.err(where, "no ports")
        for p in spec.get("ports") or []:
            target = p.get("targetPort", p.get("port"))
            for _, w in matched:
                ok = any(port_ok(target, *container_ports(c)) for c in pod_spec(w).get("containers") or [])
                if not ok:
                    self.err(where, "targetPort %r is not a container port of %s/%s"
                             % (target, w["kind"], w["metadata"]["name"]))

    def check_gpu(self, workloads):
        gpu = []
        for (kind, name), (fname, d) in workloads.items():
            for c in pod_spec(d).get("containers") or []:
                if image_name(c.get("image", "")) == "ktune-cuda":
                    gpu.append((kind, name, d, c))
        if not any(k == "DaemonSet" for k, _, _, _ in gpu):
            self.err("deploy/k8s", "no DaemonSet runs the ktune-cuda image (GPU workers)")
        for kind, name, d, c in gpu:
            where = "%s/%s" % (kind, name)
            limits = (c.get("resources") or {}).get("limits") or {}
            if "nvidia.com/gpu" not in limits:
                self.err(where, "GPU worker without resources.limits nvidia.com/gpu")
            ps = pod_spec(d)
            if not ps.get("nodeSelector") and not ps.get("affinity"):
                self.err(where, "GPU worker without a nodeSelector/affinity for GPU nodes")
            if not any(t.get("key") == "nvidia.com/gpu" for t in ps.get("tolerations") or []):
                self.err(where, "GPU worker does not tolerate the nvidia.com/gpu taint")

    def check_kustomization(self, kdir, docs):
        path = os.path.join(kdir, "kustomization.yaml")
        if not os.path.exists(path):
            self.err("deploy/k8s", "kustomization.yaml missing")
            return
        k = yaml.safe_load(open(path)) or {}
        listed = k.get("resources") or []
        files = sorted({f for f, _ in docs})
        for r in listed:
            if not os.path.exists(os.path.join(kdir, r)):
                self.err("kustomization.yaml", "resource %r does not exist" % r)
        for f in files:
            if f not in listed:
                self.err("kustomization.yaml", "%s is not listed in resources" % f)
        used = {image_name(c.get("image", "")) for _, d in docs if d.get("kind") in WORKLOADS
                for c in pod_spec(d).get("containers") or []}
        for img in k.get("images") or []:
            if img.get("name") not in used:
                self.err("kustomization.yaml", "image %r is used by no container" % img.get("name"))

    # --- Dockerfiles -------------------------------------------------------------------------------
    def check_dockerfiles(self):
        targets = cmake_targets(self.root)
        built = {}
        for rel in DOCKERFILES:
            path = os.path.join(self.root, rel)
            if not os.path.exists(path):
                self.err(rel, "missing")
                continue
            text = open(path).read().replace("\\\n", " ")
            m = re.search(r'org\.opencontainers\.image\.title="([^"]+)"', text)
            if not m:
                self.err(rel, "no org.opencontainers.image.title label naming the image")
            else:
                built[m.group(1)] = rel
            for line in text.splitlines():
                words = line.split()
                if not words or words[0].upper() != "COPY":
                    continue
                opts = [w for w in words[1:] if w.startswith("--")]
                rest = [w for w in words[1:] if not w.startswith("--")]
                srcs = rest[:-1]
                if any(o.startswith("--from=") for o in opts):
                    for s in srcs:
                        bm = re.match(r"/src/build/([^/]+)$", s)
                        if bm and bm.group(1) not in targets:
                            self.err(rel, "COPY --from the build stage of %s: not a CMake target" % s)
                    continue
                for s in srcs:
                    if not os.path.exists(os.path.join(self.root, s)):
                        self.err(rel, "COPY source %r does not exist in the repository" % s)
            for tm in re.finditer(r"--target((?:[ \t]+[A-Za-z0-9_.+-]+)+)", text):
                for t in tm.group(1).split():
                    if t not in targets:
                        self.err(rel, "builds --target %r, not an add_executable of CMakeLists.txt" % t)
        # Every image ktune runs from must be built by one of them.
        used = set()
        try:
            for _, d in load_k8s(os.path.join(self.root, "deploy/k8s")):
                for c in pod_spec(d).get("containers") or []:
                    used.add(image_name(c.get("image", "")))
        except (OSError, yaml.YAMLError):
            pass
        for img in sorted(used & KTUNE_IMAGES):
            if img not in built:
                self.err("deploy/k8s", "image %r is built by no Dockerfile" % img)
        for img in sorted(used - KTUNE_IMAGES - {"postgres"}):
            self.err("deploy/k8s", "image %r is neither a ktune image nor postgres" % img)
        return built

    # --- compose -----------------------------------------------------------------------------------
    def check_compose(self, built):
        path = os.path.join(self.root, "deploy/compose.yaml")
        try:
            doc = yaml.safe_load(open(path))
        except (OSError, yaml.YAMLError) as e:
            self.err("deploy/compose.yaml", "cannot load: %s" % e)
            return
        settings = ktuned_settings(self.root)
        envs = set(settings.values())
        services = doc.get("services") or {}
        roles = set()
        for name, s in services.items():
            where = "compose service %r" % name
            for dep in s.get("depends_on") or {}:
                if dep not in services:
                    self.err(where, "depends_on %r: no such service" % dep)
            img = image_name(s.get("image", ""))
            if img not in KTUNE_IMAGES:
                continue
            if img not in built:
                self.err(where, "image %r is built by no Dockerfile" % img)
            cmd = [str(a) for a in (s.get("command") or [])]
            if "--role" not in cmd or cmd.index("--role") + 1 >= len(cmd) \
                    or cmd[cmd.index("--role") + 1] not in ROLES:
                self.err(where, "ktuned needs --role api|worker|all in command, got %r" % cmd)
            else:
                roles.add(cmd[cmd.index("--role") + 1])
            for e in s.get("environment") or {}:
                if e.startswith("KTUNE_") and e not in envs:
                    self.err(where, "environment variable %r is not a ktuned setting" % e)
        if not {"api", "worker"} <= roles:
            self.err("deploy/compose.yaml", "needs an api and a worker service (roles %r)" % sorted(roles))

    def run(self):
        self.check_k8s()
        built = self.check_dockerfiles()
        self.check_compose(built)
        return self.errors


# --- the negative self-test: each break must be reported ----------------------------------------------
def edit_yaml(root, rel, fn):
    path = os.path.join(root, rel)
    docs = list(yaml.safe_load_all(open(path)))
    fn(docs)
    with open(path, "w") as f:
        yaml.safe_dump_all(docs, f, sort_keys=False)


def doc_of(docs, kind):
    return next(d for d in docs if d and d.get("kind") == kind)


def first_container(docs, kind):
    return pod_spec(doc_of(docs, kind))["containers"][0]


def replace_text(root, rel, old, new):
    path = os.path.join(root, rel)
    text = open(path).read()
    assert old in text, (rel, old)
    open(path, "w").write(text.replace(old, new, 1))


BREAKS = [
    ("Service selector matching no pods", "matches no workload",
     lambda r: edit_yaml(r, "deploy/k8s/api.yaml", lambda d: doc_of(d, "Service")["spec"]["selector"]
                         .update({"app.kubernetes.io/component": "apii"}))),
    ("Service targetPort not a container port", "targetPort",
     lambda r: edit_yaml(r, "deploy/k8s/api.yaml", lambda d: doc_of(d, "Service")["spec"]["ports"][0]
                         .update({"targetPort": 8081}))),
    ("probe on a port the container lacks", "readinessProbe port",
     lambda r: edit_yaml(r, "deploy/k8s/api.yaml", lambda d: first_container(d, "Deployment")
                         ["readinessProbe"]["httpGet"].update({"port": "metrics"}))),
    ("configMapRef to a missing ConfigMap", "ConfigMap 'ktune-conf'",
     lambda r: edit_yaml(r, "deploy/k8s/worker-gpu.yaml", lambda d: first_container(d, "DaemonSet")
                         ["envFrom"][0]["configMapRef"].update({"name": "ktune-conf"}))),
    ("secretKeyRef to a missing key", "has no key",
     lambda r: edit_yaml(r, "deploy/k8s/api.yaml", lambda d: first_container(d, "Deployment")
                         ["env"][0]["valueFrom"]["secretKeyRef"].update({"key": "DATABASE_URL"}))),
    ("GPU DaemonSet without nvidia.com/gpu", "nvidia.com/gpu",
     lambda r: edit_yaml(r, "deploy/k8s/worker-gpu.yaml", lambda d: first_container(d, "DaemonSet")
                         ["resources"]["limits"].pop("nvidia.com/gpu"))),
    ("an env name that is no ktuned setting", "KTUNE_WORKER_COUNT",
     lambda r: edit_yaml(r, "deploy/k8s/config.yaml", lambda d: d[0]["data"]
                         .update({"KTUNE_WORKER_COUNT": "2"}))),
    ("a container env name that is no ktuned setting", "'KTUNE_WORKER'",
     lambda r: replace_text(r, "deploy/k8s/worker-gpu.yaml", "- name: KTUNE_WORKERS", "- name: KTUNE_WORKER")),
    ("a compose env name that is no ktuned setting", "KTUNE_LISTEN_ADDR",
     lambda r: replace_text(r, "deploy/compose.yaml", "  KTUNE_LISTEN: 0.0.0.0:8080", "  KTUNE_LISTEN_ADDR: 0.0.0.0:8080")),
    ("a bad --role", "--role",
     lambda r: edit_yaml(r, "deploy/k8s/worker-cpu.yaml", lambda d: first_container(d, "Deployment")
                         .update({"args": ["--role", "measurer"]}))),
    ("selector not matching the pod labels", "does not match the pod template",
     lambda r: edit_yaml(r, "deploy/k8s/worker-cpu.yaml", lambda d: doc_of(d, "Deployment")["spec"]
                         ["selector"]["matchLabels"].update({"app.kubernetes.io/component": "cpu"}))),
    ("StatefulSet serviceName not headless", "headless",
     lambda r: edit_yaml(r, "deploy/k8s/postgres.yaml", lambda d: doc_of(d, "Service")["spec"]
                         .pop("clusterIP"))),
    ("volumeMount of no volume", "volumeMount",
     lambda r: edit_yaml(r, "deploy/k8s/postgres.yaml", lambda d: first_container(d, "StatefulSet")
                         ["volumeMounts"][0].update({"name": "pgdata"}))),
    ("wrong apiVersion", "apiVersion",
     lambda r: edit_yaml(r, "deploy/k8s/api.yaml", lambda d: doc_of(d, "Deployment")
                         .update({"apiVersion": "extensions/v1beta1"}))),
    ("a manifest missing from kustomization.yaml", "not listed",
     lambda r: replace_text(r, "deploy/k8s/kustomization.yaml", "  - worker-cpu.yaml\n", "")),
    ("an unknown image", "neither a ktune image",
     lambda r: replace_text(r, "deploy/k8s/worker-cpu.yaml", "image: ktune:latest", "image: ktune-cpu:latest")),
    ("a COPY source missing from the repository", "does not exist in the repository",
     lambda r: replace_text(r, "Dockerfile", "COPY kernels kernels", "COPY kernel kernels")),
    ("a copied binary that is no CMake target", "not a CMake target",
     lambda r: replace_text(r, "deploy/Dockerfile.cuda", "/src/build/ktune-runner bin", "/src/build/ktune-run bin")),
    ("compose worker without --role", "compose service 'worker'",
     lambda r: replace_text(r, "deploy/compose.yaml", 'command: ["--role", "worker"]\n    depends_on',
                            'command: []\n    depends_on')),
]

COPIED = ["deploy/k8s", "deploy/compose.yaml", "deploy/Dockerfile.cuda", "Dockerfile", "CMakeLists.txt",
          "service/core/config.c"]


def scratch_copy(root, tmp):
    for rel in COPIED:
        src, dst = os.path.join(root, rel), os.path.join(tmp, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.isdir(src):
            shutil.copytree(src, dst)
        else:
            shutil.copy(src, dst)
    # COPY sources only need to exist: link the rest of the repository's top level.
    for name in os.listdir(root):
        if not os.path.exists(os.path.join(tmp, name)):
            os.symlink(os.path.join(root, name), os.path.join(tmp, name))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", default=os.path.normpath(os.path.join(os.path.dirname(__file__), "../..")))
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    errors = Checker(root).run()
    if errors:
        print("deploy manifests: %d problem(s)" % len(errors))
        for e in errors:
            print("  " + e)
        return 1
    n_docs = len(load_k8s(os.path.join(root, "deploy/k8s")))
    print("deploy manifests: %d Kubernetes objects, compose and %d Dockerfiles consistent"
          % (n_docs, len(DOCKERFILES)))
    failed = 0
    for what, expect, brk in BREAKS:
        tmp = tempfile.mkdtemp(prefix="ktune-deploy-test-")
        try:
            scratch_copy(root, tmp)
            brk(tmp)
            found = Checker(tmp).run()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        hit = [e for e in found if expect in e]
        if not hit:
            print("FAIL: %s was not reported (wanted %r); got %r" % (what, expect, found))
            failed += 1
        else:
            print("ok: %s -> %s" % (what, hit[0]))
    if failed:
        return 1
    print("deploy manifests: all %d breaks reported" % len(BREAKS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
