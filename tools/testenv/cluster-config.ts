// The real cluster's fixed names, addresses and paths, and the configuration
// files of its components. Fixed because several components write to fixed
// host paths whatever their flags say: one such cluster per machine at a time.

import { stringify as toYaml } from "yaml";

/** The cluster's own bridge: it carries the node IP and every pod's veth. */
export const BRIDGE = "edge-k8s0";
export const NODE_NAME = "edge-node";
export const NODE_IP = "10.244.0.1";
export const POD_CIDR = "10.244.0.0/24";
export const SERVICE_CIDR = "10.96.0.0/24";
/** The `kubernetes` Service's ClusterIP: the first address of the service range. */
export const KUBERNETES_SERVICE_IP = "10.96.0.1";
export const APISERVER_PORT = 6443;
/** The nftables table (family inet) that keeps the cluster's packets on its bridge. */
export const GUARD_TABLE = "edge_cluster_guard";

/** Data that lives as long as the cluster: etcd, images, the kubelet's root, certificates, logs. */
export const DATA_DIR = "/var/lib/edge-cluster";
/** Sockets and runtime state; short, because shim socket paths are limited (≤ 42 characters). */
export const RUN_DIR = "/run/edge-cluster";
/** Holds the pid of the process whose cluster is running. */
export const LOCK_FILE = "/run/edge-cluster.lock";
/** What the host looked like before the running cluster started: the next start reads it if a stop never ran. */
export const HOST_RECORD_FILE = "/run/edge-cluster.host.json";

export const paths = {
  pki: `${DATA_DIR}/pki`,
  etcd: `${DATA_DIR}/etcd`,
  logs: `${DATA_DIR}/logs`,
  kubeconfigs: `${DATA_DIR}/kubeconfig`,
  containerdRoot: `${DATA_DIR}/containerd`,
  containerdConfig: `${DATA_DIR}/containerd.toml`,
  kubeletRoot: `${DATA_DIR}/kubelet`,
  kubeletConfig: `${DATA_DIR}/kubelet.yaml`,
  kubeProxyConfig: `${DATA_DIR}/kube-proxy.yaml`,
  podLogs: `${DATA_DIR}/pod-logs`,
  volumePlugins: `${DATA_DIR}/volume-plugins`,
  cniConf: `${DATA_DIR}/cni`,
  cniIpam: `${DATA_DIR}/cni-ipam`,
  containerdState: `${RUN_DIR}/containerd`,
  containerdSocket: `${RUN_DIR}/containerd.sock`,
  shimSockets: `${RUN_DIR}/s`,
  runcRoot: `${RUN_DIR}/runc`,
} as const;

/**
 * Host paths that components create whatever their flags say (found by
 * comparing the machine before and after a run). Removed on stop when they did
 * not exist before the start.
 */
export const FIXED_HOST_PATHS = [
  "/var/lib/kubelet",
  "/var/log/containers",
  "/var/log/pods",
  "/var/lib/cni",
  "/run/mount",
  "/usr/libexec/kubernetes",
  "/var/run/kubernetes",
  "/run/containerd",
  "/var/lib/containerd",
  "/opt/containerd",
  "/run/netns",
  "/run/runc",
  "/run/nri",
  "/etc/cdi",
  "/var/run/cdi",
  "/etc/cni",
  "/opt/cni",
  "/etc/kubernetes",
  "/var/lib/kube-proxy",
  "/run/xtables.lock",
] as const;

/** Host sysctls that the components are known to change (kubelet, the bridge plugin, kube-proxy). */
export const SYSCTLS = [
  "kernel/panic",
  "kernel/panic_on_oops",
  "kernel/keys/root_maxkeys",
  "kernel/keys/root_maxbytes",
  "vm/overcommit_memory",
  "vm/panic_on_oom",
  "net/ipv4/ip_forward",
  "net/ipv4/conf/all/*",
  "net/ipv4/conf/default/*",
  "net/ipv6/conf/all/forwarding",
  "net/ipv6/conf/default/forwarding",
  "net/netfilter/nf_conntrack_*",
  "net/bridge/*",
] as const;

export function containerdConfig(pauseImage: string): string {
  // containerd 2.4 reads version 4: the grpc/ttrpc addresses are plugin options
  // there (top-level [grpc] is silently ignored).
  return `version = 4
root = "${paths.containerdRoot}"
state = "${paths.containerdState}"
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[plugins.'io.containerd.server.v1.grpc']
  address = "${paths.containerdSocket}"
[plugins.'io.containerd.server.v1.ttrpc']
  address = "${paths.containerdSocket}.ttrpc"
[plugins.'io.containerd.server.v1.debug']
  address = ""
[plugins.'io.containerd.shim.v1.manager']
  socket_dir = "${paths.shimSockets}"
[plugins.'io.containerd.internal.v1.opt']
  path = "${DATA_DIR}/opt"

[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "${pauseImage}"

[plugins.'io.containerd.cri.v1.runtime']
  # This VM's bounding set lacks CAP_SYS_RESOURCE: writing a negative
  # oom_score_adj fails every sandbox.
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  ignore_deprecation_warnings = ["io.containerd.deprecation/cgroup-v1"]
  cdi_spec_dirs = ["${DATA_DIR}/cdi"]
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      BinaryName = "runc"
      Root = "${paths.runcRoot}"
      SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "${paths.cniConf}"

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
`;
}

/** Pods on the cluster's bridge; no masquerade, so nothing a pod sends can pass as the host's. */
export function cniConfig(): string {
  return JSON.stringify(
    {
      cniVersion: "1.0.0",
      name: "edge-cluster",
      plugins: [
        {
          type: "bridge",
          bridge: BRIDGE,
          isGateway: true,
          ipMasq: false,
          hairpinMode: true,
          ipam: {
            type: "host-local",
            dataDir: paths.cniIpam,
            ranges: [[{ subnet: POD_CIDR, rangeStart: "10.244.0.10", gateway: NODE_IP }]],
            routes: [{ dst: "0.0.0.0/0" }],
          },
        },
      ],
    },
    null,
    2,
  );
}

export function kubeletConfig(caFile: string, certFile: string, keyFile: string): string {
  return toYaml({
    apiVersion: "kubelet.config.k8s.io/v1beta1",
    kind: "KubeletConfiguration",
    address: NODE_IP,
    port: 10250,
    readOnlyPort: 0,
    healthzPort: 0,
    tlsCertFile: certFile,
    tlsPrivateKeyFile: keyFile,
    authentication: {
      anonymous: { enabled: false },
      webhook: { enabled: true },
      x509: { clientCAFile: caFile },
    },
    authorization: { mode: "Webhook" },
    containerRuntimeEndpoint: `unix://${paths.containerdSocket}`,
    imageServiceEndpoint: `unix://${paths.containerdSocket}`,
    // This machine has cgroup v1 (deprecated in kubelet, refused unless told).
    failCgroupV1: false,
    cgroupDriver: "cgroupfs",
    failSwapOn: false,
    enforceNodeAllocatable: [],
    localStorageCapacityIsolation: false,
    // No upstream DNS for pods: traffic stays on this machine. Services by name
    // come from the cluster's own responder on the node IP (cluster-dns.ts).
    resolvConf: "",
    clusterDNS: [NODE_IP],
    clusterDomain: "cluster.local",
    makeIPTablesUtilChains: false,
    podLogsDir: paths.podLogs,
    volumePluginDir: paths.volumePlugins,
    podCIDR: POD_CIDR,
    maxPods: 60,
    serializeImagePulls: false,
    // The disk is shared with others' builds: no image GC or eviction by disk use.
    imageGCHighThresholdPercent: 100,
    evictionHard: { "memory.available": "100Mi" },
    syncFrequency: "10s",
    fileCheckFrequency: "10s",
    nodeStatusReportFrequency: "10s",
  });
}

export function kubeProxyConfig(kubeconfig: string): string {
  return toYaml({
    apiVersion: "kubeproxy.config.k8s.io/v1alpha1",
    kind: "KubeProxyConfiguration",
    mode: "nftables",
    clientConnection: { kubeconfig },
    hostnameOverride: NODE_NAME,
    bindAddress: NODE_IP,
    clusterCIDR: POD_CIDR,
    nodePortAddresses: [`${NODE_IP}/32`],
    healthzBindAddress: `${NODE_IP}:10256`,
    metricsBindAddress: `${NODE_IP}:10249`,
    // Zero leaves the host's conntrack settings alone.
    conntrack: {
      maxPerCore: 0,
      min: 0,
      tcpEstablishedTimeout: "0s",
      tcpCloseWaitTimeout: "0s",
      udpTimeout: "0s",
      udpStreamTimeout: "0s",
    },
  });
}
