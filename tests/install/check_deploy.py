"""check_deploy.py MODELFS: check deploy/ offline (docs/DEPLOY.md).

Kubernetes manifests (python3-yaml): every document names its apiVersion,
kind and name; the DaemonSet's selector matches its pods; every volume
mount names a volume; /dev/fuse comes from the host as a character
device; the mountpoint is a hostPath mounted Bidirectional in a
privileged container (Kubernetes refuses Bidirectional otherwise); the
daemon polls (--poll-secs) a read-only repository volume that is the
ReadOnlyMany claim of repository-pvc.yaml; both probes read the mounted
tree; the client pod sees the same host folder with HostToContainer.
Dockerfile: Debian 12 stages, and every library the binary needs
(readelf NEEDED) is installed by a package the runtime stage names.
Prints one line per check and ends "N passed, M failed"."""
import glob
import os
import re
import shlex
import subprocess
import sys

import yaml

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPLOY = os.path.join(TOP, "deploy")
results = []


def check(what, ok):
    results.append(bool(ok))
    print(("ok     " if ok else "FAILED ") + what)


docs = {}
for path in sorted(glob.glob(os.path.join(DEPLOY, "kubernetes", "*.yaml"))):
    for d in yaml.safe_load_all(open(path)):
        name = os.path.basename(path)
        check(f"{name}: apiVersion, kind, metadata.name",
              d and d.get("apiVersion") and d.get("kind") and d.get("metadata", {}).get("name"))
        if d["kind"] != "Namespace":
            check(f"{name}: in namespace modelfs", d["metadata"].get("namespace") == "modelfs")
        docs[d["kind"]] = d

ds = docs["DaemonSet"]
spec = ds["spec"]["template"]["spec"]
check("DaemonSet: selector matches the pod labels",
      spec is not None and ds["spec"]["selector"]["matchLabels"].items()
      <= ds["spec"]["template"]["metadata"]["labels"].items())
(c,) = spec["containers"]
vols = {v["name"]: v for v in spec["volumes"]}
mounts = {m["mountPath"]: m for m in c["volumeMounts"]}
check("DaemonSet: every volumeMount names a volume", all(m["name"] in vols for m in mounts.values()))
fuse = mounts.get("/dev/fuse")
check("DaemonSet: /dev/fuse from the host, a character device",
      fuse and vols[fuse["name"]].get("hostPath") == {"path": "/dev/fuse", "type": "CharDevice"})

# The daemon's command line, as the shell in args would run it.
script = " ".join(c.get("command", [])[2:] + c.get("args", []))
words = shlex.split(script.split("exec ", 1)[1]) if "exec " in script else []
check("DaemonSet: runs modelfs -f with --poll-secs", words[:2] == ["modelfs", "-f"]
      and any(re.fullmatch(r"--poll-secs=[1-9][0-9]*", w) for w in words))
repo, mnt = (words[-2], words[-1]) if len(words) >= 2 else ("", "")
rm = mounts.get(repo, {})
check("DaemonSet: the repository is a read-only volume from the shared claim",
      rm.get("readOnly") and "persistentVolumeClaim" in vols.get(rm.get("name"), {}))
pvc = docs["PersistentVolumeClaim"]
check("the claim is repository-pvc.yaml's, ReadOnlyMany",
      vols[rm["name"]]["persistentVolumeClaim"]["claimName"] == pvc["metadata"]["name"]
      and pvc["spec"]["accessModes"] == ["ReadOnlyMany"])
mm = mounts.get(mnt, {})
host = vols.get(mm.get("name"), {}).get("hostPath", {})
check("DaemonSet: the mountpoint is a hostPath mounted Bidirectional",
      mm.get("mountPropagation") == "Bidirectional" and host.get("path"))
check("DaemonSet: the container is privileged (Bidirectional needs it)",
      c.get("securityContext", {}).get("privileged") is True)
for probe in ("readinessProbe", "livenessProbe"):
    cmd = " ".join(c.get(probe, {}).get("exec", {}).get("command", []))
    check(f"DaemonSet: {probe} reads the mounted tree", mnt and mnt + "/" in cmd)
check("DaemonSet: the grace period covers the daemon's drain (12 s)",
      spec.get("terminationGracePeriodSeconds", 30) >= 15)

pod = docs["Pod"]
pc = pod["spec"]["containers"][0]
pvols = {v["name"]: v for v in pod["spec"]["volumes"]}
pm = [m for m in pc["volumeMounts"] if pvols[m["name"]].get("hostPath", {}).get("path") == host.get("path")]
check("client pod: the same host folder, HostToContainer",
      len(pm) == 1 and pm[0].get("mountPropagation") == "HostToContainer")

# The Dockerfile.
text = open(os.path.join(DEPLOY, "Dockerfile")).read().replace("\\\n", " ")
froms = re.findall(r"^FROM\s+(\S+)", text, re.M)
check("Dockerfile: every stage is Debian 12", froms and all(re.fullmatch(r"debian:12(-slim)?", f) for f in froms))
runtime = text.split("FROM ")[-1]
installed = set()
for line in re.findall(r"apt-get install ([^&]*)", runtime):
    installed |= {w for w in line.split() if not w.startswith("-")}
needed = re.findall(r"\(NEEDED\).*\[(.*)\]", subprocess.run(
    ["readelf", "-d", sys.argv[1]], capture_output=True, text=True).stdout)
found = dict(re.findall(r"^\s*(\S+) => (/\S+)", subprocess.run(
    ["ldd", sys.argv[1]], capture_output=True, text=True).stdout, re.M))
base = {"libc6", "libgcc-s1", "libstdc++6"}        # in every Debian image
missing = []
for lib in needed:
    # As ldd found it, and where its links lead (alternatives, /usr merge).
    paths = {found.get(lib, "/lib/x86_64-linux-gnu/" + lib)}
    paths |= {os.path.realpath(q) for q in paths}
    paths |= {"/usr" + q for q in paths if not q.startswith("/usr/")}
    out = subprocess.run(["dpkg", "-S"] + sorted(paths), capture_output=True, text=True).stdout
    pkgs = {p.split(":")[0] for p in out.splitlines()}
    if not pkgs & (installed | base):
        missing.append(f"{lib} ({', '.join(sorted(pkgs)) or 'no package'})")
check("Dockerfile: the runtime stage installs every library modelfs needs"
      + (": missing " + ", ".join(missing) if missing else ""), needed and not missing)
check("Dockerfile: the runtime stage has fusermount3 (fuse3)", "fuse3" in installed)

passed = sum(results)
print(f"{passed} passed, {len(results) - passed} failed")
sys.exit(0 if passed == len(results) else 1)
