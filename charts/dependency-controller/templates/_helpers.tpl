{{/*
The labels manifests/deploy/kustomization.yaml gives every object and, with
includeSelectors, every selector. They stay the selectors here too, so that
Deployments installed from either can be upgraded from the other (a
Deployment's selector cannot change).
*/}}
{{- define "dependency-controller.labels" -}}
app.kubernetes.io/name: dependency-controller
app.kubernetes.io/part-of: dependency-controller
{{- end }}

{{/*
Helm's standard labels, on each object's metadata only: never in a selector
or a Pod template, where a new chart version would change them.
*/}}
{{- define "dependency-controller.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}

{{/* The selector of one component's Pods; the argument is the component. */}}
{{- define "dependency-controller.selector" -}}
app.kubernetes.io/component: {{ . }}
{{ include "dependency-controller.labels" . }}
{{- end }}

{{- define "dependency-controller.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end }}

{{/* imagePullPolicy, when set; otherwise Kubernetes' default applies. */}}
{{- define "dependency-controller.pullPolicy" -}}
{{- with .Values.image.pullPolicy }}
imagePullPolicy: {{ . }}
{{- end }}
{{- end }}

{{/*
The URL kcp's shards call: webhook.url, checked here too so that it holds
with --skip-schema-validation, or the Service's.
*/}}
{{- define "dependency-controller.webhookUrl" -}}
{{- with .Values.webhook.url }}
{{- $url := urlParse . }}
{{- if not (hasPrefix "https://" .) }}
{{- fail (printf "webhook.url must start with https:// (kcp calls webhooks over TLS only): %q" .) }}
{{- end }}
{{- if not $url.hostname }}
{{- fail (printf "webhook.url names no host: %q" .) }}
{{- end }}
{{- if not (hasSuffix "/validate" $url.path) }}
{{- fail (printf "webhook.url's path must end with /validate, where the webhook answers admission reviews: %q" .) }}
{{- end }}
{{- if or $url.query $url.fragment $url.userinfo }}
{{- fail (printf "webhook.url may carry no query, fragment or user info (kcp refuses them in a webhook configuration): %q" .) }}
{{- end }}
{{- end }}
{{- .Values.webhook.url | default (printf "https://dependency-webhook.%s.svc:443/validate" .Release.Namespace) }}
{{- end }}

{{/* The data of the controller's ConfigMap, as YAML. */}}
{{- define "dependency-controller.configData" -}}
webhook-url: {{ include "dependency-controller.webhookUrl" . | quote }}
{{- end }}

{{/*
The controller's ConfigMap carries a hash of its data in its name, as
kustomize's configMapGenerator does: a new URL is a new name in the
controller's Pod template, which rolls the controller.
*/}}
{{- define "dependency-controller.configName" -}}
dependency-controller-config-{{ include "dependency-controller.configData" . | sha256sum | trunc 10 }}
{{- end }}

{{/*
NetworkPolicy ingress rules of both components; the argument is
.Values.networkPolicy. Metrics: any Pod in the metrics namespace.
*/}}
{{- define "dependency-controller.metricsRule" }}
- from:
    - namespaceSelector:
        matchLabels:
          kubernetes.io/metadata.name: {{ .metricsNamespace }}
  ports:
    - port: metrics
      protocol: TCP
{{- end }}

{{/*
The probe port, only when nodeIpBlocks is set (a CNI that filters the
kubelet's traffic from the node).
*/}}
{{- define "dependency-controller.probeRule" }}
{{- with .nodeIpBlocks }}
- from:
    {{- range . }}
    - ipBlock:
        {{- toYaml . | nindent 8 }}
    {{- end }}
  ports:
    - port: health
      protocol: TCP
{{- end }}
{{- end }}

{{/*
A component's extraArgs, one "- <flag>" line each, after the flags the chart
sets; the argument is a dict with "root" (the chart's context) and
"component" ("controller" or "webhook"). Every entry must name a flag of
that binary (files/flags.yaml) as --<flag>=<value>, or --<flag> for a
switch, and not one the chart sets: its mounts, probes and ports depend on
those.
*/}}
{{- define "dependency-controller.extraArgs" -}}
{{- $flags := get (.root.Files.Get "files/flags.yaml" | fromYaml) .component }}
{{- $allowed := list }}
{{- range concat $flags.values $flags.switches }}
{{- if not (has . $flags.set) }}
{{- $allowed = append $allowed (printf "--%s" .) }}
{{- end }}
{{- end }}
{{- range (get .root.Values .component).extraArgs }}
{{- if not (regexMatch "^--[a-z0-9][a-z0-9-]*(=.*)?$" .) }}
{{- fail (printf "%s.extraArgs: %q is not --<flag>=<value> or --<flag>" $.component .) }}
{{- end }}
{{- $name := regexReplaceAll "^--([a-z0-9-]+)(=.*)?$" . "${1}" }}
{{- $value := regexFind "=.*$" . | trimPrefix "=" }}
{{- if has $name $flags.set }}
{{- fail (printf "%s.extraArgs cannot set --%s: the chart sets it" $.component $name) }}
{{- else if has $name $flags.values }}
{{- if not (contains "=" .) }}
{{- fail (printf "%s.extraArgs: --%s takes a value: --%s=<value>" $.component $name $name) }}
{{- end }}
{{- else if has $name $flags.switches }}
{{- if and (contains "=" .) (not (has $value (list "true" "false"))) }}
{{- fail (printf "%s.extraArgs: --%s is a switch: --%s, --%s=true or --%s=false, not %q" $.component $name $name $name $name .) }}
{{- end }}
{{- else }}
{{- fail (printf "%s.extraArgs: --%s is not a flag of the %s (extraArgs may set %s)" $.component $name $.component (join ", " $allowed)) }}
{{- end }}
- {{ . | quote }}
{{- end }}
{{- end }}

{{/*
A component's Pod template labels: the selector, then podLabels, which may
not set a selector label (the Deployment's selector cannot change, and the
Service, NetworkPolicy and PodDisruptionBudget select by them). The
argument is a dict with "root" and "component".
*/}}
{{- define "dependency-controller.podLabels" -}}
{{- $selector := include "dependency-controller.selector" .component | fromYaml }}
{{- include "dependency-controller.selector" .component }}
{{- range $key, $value := (get .root.Values .component).podLabels }}
{{- if hasKey $selector $key }}
{{- fail (printf "%s.podLabels cannot set %s: the chart's selectors use it" $.component $key) }}
{{- end }}
{{- end }}
{{- with (get .root.Values .component).podLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
The scheduling fields of a component's Pod spec that its values set:
imagePullSecrets, priorityClassName, nodeSelector, affinity, tolerations,
and topologySpreadConstraints, where a constraint without a labelSelector
gets the component's selector. The argument is a dict with "root" and
"component".
*/}}
{{- define "dependency-controller.podScheduling" -}}
{{- $values := get .root.Values .component }}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $values.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with $values.nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $values.affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $values.tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $values.topologySpreadConstraints }}
{{- $selector := include "dependency-controller.selector" $.component | fromYaml }}
topologySpreadConstraints:
{{- range . }}
{{- $constraint := deepCopy . }}
{{- if not (hasKey $constraint "labelSelector") }}
{{- $_ := set $constraint "labelSelector" (dict "matchLabels" $selector) }}
{{- end }}
  - {{ toYaml $constraint | nindent 4 | trim }}
{{- end }}
{{- end }}
{{- end }}

{{/*
A component's Pod template annotations, when podAnnotations is set; the
argument is a dict with "root" and "component".
*/}}
{{- define "dependency-controller.podAnnotations" -}}
{{- with (get .root.Values .component).podAnnotations }}
annotations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
Labels as YAML: "chart", the chart's own (YAML), and "extra", a map of more
from the values; where both have a key, the chart's value stays.
*/}}
{{- define "dependency-controller.withLabels" -}}
{{- toYaml (merge (fromYaml .chart) (.extra | default dict)) }}
{{- end }}

{{/*
"true" in kcp mode (kcpWebhookReads.render), empty otherwise. In kcp mode
the chart renders only the ClusterRole of templates/kcp-webhook-reads.yaml,
for kcp's system:admin: every template of the hosting cluster renders only
when this is empty, so that no install puts anything of kcp's into the
hosting cluster, or the other way round.
*/}}
{{- define "dependency-controller.kcpMode" -}}
{{- if (.Values.kcpWebhookReads | default dict).render }}true{{ end }}
{{- end }}
