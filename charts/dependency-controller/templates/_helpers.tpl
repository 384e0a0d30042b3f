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

{{- define "dependency-controller.webhookUrl" -}}
{{ .Values.webhook.url | default (printf "https://dependency-webhook.%s.svc:443/validate" .Release.Namespace) }}
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
sets; the argument is a dict with "component", "args" and "reserved" (the
flags the chart sets for that component, which an extra argument may not set
again: the chart's mounts and probes depend on them).
*/}}
{{- define "dependency-controller.extraArgs" -}}
{{- range .args }}
{{- $name := regexReplaceAll "=.*$" . "" }}
{{- if has $name $.reserved }}
{{- fail (printf "%s.extraArgs cannot set %s: the chart sets it" $.component $name) }}
{{- end }}
- {{ . | quote }}
{{- end }}
{{- end }}
