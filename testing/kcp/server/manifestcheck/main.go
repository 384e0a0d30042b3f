// Command manifest-check validates Kubernetes manifests with the Kubernetes
// API server's own code (kcp's Kubernetes 1.32 fork), without an API server:
//
//	kubectl kustomize manifests/deploy | manifest-check
//
// For every object in the multi-document YAML on stdin it does what
// kube-apiserver does on a create with fieldValidation=Strict (kubectl's
// default): decode with the strict YAML serializer (unknown and duplicate
// fields are errors), apply the scheme's defaults, convert to the internal
// version, and run rest.BeforeCreate with the kind's registry strategy
// (PrepareForCreate, Validate, ObjectMeta validation, create warnings).
// Pod templates are also evaluated against the restricted Pod Security
// Standard (latest), with the checks of k8s.io/pod-security-admission.
//
// Two checks go beyond the API server, because it accepts what then fails at
// runtime: a probe's named port must be a port of its container, and a
// Service's named targetPort must be a port of the Pod templates it selects.
//
// It prints one line per object ("ok apps/v1 Deployment ns/name" or "FAIL
// ..." followed by one indented line per error, "warning ..." lines for API
// server warnings) and exits 1 if any object failed, 2 on a usage error.
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/networking/install"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	_ "k8s.io/kubernetes/pkg/apis/rbac/install"
	"k8s.io/kubernetes/pkg/registry/apps/deployment"
	"k8s.io/kubernetes/pkg/registry/core/configmap"
	"k8s.io/kubernetes/pkg/registry/core/namespace"
	"k8s.io/kubernetes/pkg/registry/core/secret"
	"k8s.io/kubernetes/pkg/registry/core/service"
	"k8s.io/kubernetes/pkg/registry/core/serviceaccount"
	"k8s.io/kubernetes/pkg/registry/networking/networkpolicy"
	"k8s.io/kubernetes/pkg/registry/policy/poddisruptionbudget"
	"k8s.io/kubernetes/pkg/registry/rbac/clusterrole"
	psapi "k8s.io/pod-security-admission/api"
	pspolicy "k8s.io/pod-security-admission/policy"
)

// strategies are the kinds this command knows, with the create strategy
// kube-apiserver's REST storage uses for each.
var strategies = map[schema.GroupKind]rest.RESTCreateStrategy{
	{Group: "apps", Kind: "Deployment"}:                       deployment.Strategy,
	{Group: "", Kind: "Namespace"}:                            namespace.Strategy,
	{Group: "", Kind: "ServiceAccount"}:                       serviceaccount.Strategy,
	{Group: "", Kind: "Service"}:                              service.Strategy,
	{Group: "", Kind: "ConfigMap"}:                            configmap.Strategy,
	{Group: "", Kind: "Secret"}:                               secret.Strategy,
	{Group: "policy", Kind: "PodDisruptionBudget"}:            poddisruptionbudget.Strategy,
	{Group: "networking.k8s.io", Kind: "NetworkPolicy"}:       networkpolicy.Strategy,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}: clusterrole.Strategy,
}

// restricted is the Pod Security Standard every Pod template must meet.
var restricted = psapi.LevelVersion{Level: psapi.LevelRestricted, Version: psapi.LatestVersion()}

// result is what one document yielded.
type result struct {
	id       string // "apps/v1 Deployment ns/name", or "document N"
	errs     []string
	warnings []string
	// Set for decoded objects, for the cross-object checks.
	obj runtime.Object
}

type warnings []string

func (w *warnings) AddWarning(_, text string) { *w = append(*w, text) }

func main() {
	if len(os.Args) > 1 {
		fmt.Fprintln(os.Stderr, "usage: kubectl kustomize DIR | manifest-check")
		os.Exit(2)
	}
	results, err := checkStream(os.Stdin)
	if err != nil {
		fmt.Fprintf(os.Stderr, "manifest-check: %v\n", err)
		os.Exit(2)
	}
	failed := 0
	for _, r := range results {
		if len(r.errs) == 0 {
			fmt.Printf("ok %s\n", r.id)
		} else {
			failed++
			fmt.Printf("FAIL %s\n", r.id)
			for _, e := range r.errs {
				fmt.Printf("  %s\n", strings.ReplaceAll(e, "\n", "\n    "))
			}
		}
		for _, w := range r.warnings {
			fmt.Printf("  warning: %s\n", w)
		}
	}
	fmt.Printf("%d objects, %d failed\n", len(results), failed)
	if failed > 0 || len(results) == 0 {
		if len(results) == 0 {
			fmt.Fprintln(os.Stderr, "manifest-check: no objects on stdin")
		}
		os.Exit(1)
	}
}

func checkStream(in io.Reader) ([]*result, error) {
	strict, err := strictYAMLDecoder()
	if err != nil {
		return nil, err
	}
	reader := utilyaml.NewYAMLReader(bufio.NewReader(in))
	var results []*result
	for n := 1; ; n++ {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("cannot read document %d: %w", n, err)
		}
		if isEmpty(doc) {
			continue
		}
		results = append(results, checkDocument(strict, n, doc))
	}
	crossCheck(results)
	return results, nil
}

// strictYAMLDecoder is the decoder kube-apiserver uses for an
// application/yaml body with fieldValidation=Strict.
func strictYAMLDecoder() (runtime.Decoder, error) {
	for _, info := range legacyscheme.Codecs.SupportedMediaTypes() {
		if info.MediaType == runtime.ContentTypeYAML && info.StrictSerializer != nil {
			return info.StrictSerializer, nil
		}
	}
	return nil, errors.New("the scheme has no strict YAML serializer")
}

func isEmpty(doc []byte) bool {
	j, err := utilyaml.ToJSON(doc)
	return err == nil && strings.TrimSpace(string(j)) == "null"
}

func checkDocument(decoder runtime.Decoder, n int, doc []byte) *result {
	r := &result{id: fmt.Sprintf("document %d", n)}
	versioned, gvk, err := decoder.Decode(doc, nil, nil)
	if gvk != nil && gvk.Kind != "" {
		r.id = fmt.Sprintf("document %d (%s %s)", n, gvk.GroupVersion().String(), gvk.Kind)
	}
	var strictErr interface{ Errors() []error }
	switch {
	case err == nil:
	case runtime.IsStrictDecodingError(err) && errors.As(err, &strictErr) && versioned != nil:
		for _, e := range strictErr.Errors() {
			r.errs = append(r.errs, "strict decoding: "+e.Error())
		}
	case runtime.IsNotRegisteredError(err):
		r.errs = append(r.errs, "unknown kind: "+err.Error())
		return r
	default:
		// Name the object if the document is at least a YAML object.
		u := &unstructured.Unstructured{}
		if j, jerr := utilyaml.ToJSON(doc); jerr == nil && u.UnmarshalJSON(j) == nil {
			r.id = fmt.Sprintf("%s %s %s", u.GetAPIVersion(), u.GetKind(), objectName(u))
		}
		r.errs = append(r.errs, "cannot decode: "+err.Error())
		return r
	}
	accessor, err := meta.Accessor(versioned)
	if err != nil {
		r.errs = append(r.errs, err.Error())
		return r
	}
	r.id = fmt.Sprintf("%s %s %s", gvk.GroupVersion().String(), gvk.Kind, objectName(accessor))
	strategy, ok := strategies[gvk.GroupKind()]
	if !ok {
		r.errs = append(r.errs, fmt.Sprintf("unknown kind: manifest-check does not validate %s", gvk.GroupKind()))
		return r
	}

	legacyscheme.Scheme.Default(versioned)
	r.obj = versioned
	r.errs = append(r.errs, podSecurity(versioned)...)

	internal, err := legacyscheme.Scheme.ConvertToVersion(versioned, schema.GroupVersion{Group: gvk.Group, Version: runtime.APIVersionInternal})
	if err != nil {
		r.errs = append(r.errs, "cannot convert to the internal version: "+err.Error())
		return r
	}
	errs, warns := beforeCreate(strategy, internal)
	r.errs = append(r.errs, errs...)
	r.warnings = warns
	return r
}

func objectName(o metav1.Object) string {
	if o.GetNamespace() == "" {
		return o.GetName()
	}
	return o.GetNamespace() + "/" + o.GetName()
}

// beforeCreate runs what kube-apiserver runs on a create before admission
// and storage, and returns the field errors and warnings.
func beforeCreate(strategy rest.RESTCreateStrategy, obj runtime.Object) ([]string, []string) {
	accessor, err := meta.Accessor(obj)
	if err != nil {
		return []string{err.Error()}, nil
	}
	// The request's namespace: the object's, or kubectl's default.
	ns := ""
	if strategy.NamespaceScoped() {
		ns = accessor.GetNamespace()
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
	}
	if accessor.GetName() == "" && accessor.GetGenerateName() != "" {
		accessor.SetName(strategy.GenerateName(accessor.GetGenerateName()))
	}
	rest.FillObjectMetaSystemFields(accessor)
	var w warnings
	ctx := warning.WithWarningRecorder(genericapirequest.WithNamespace(context.Background(), ns), &w)
	err = rest.BeforeCreate(strategy, ctx, obj)
	if err == nil {
		return nil, w
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		if details := status.Status().Details; details != nil && len(details.Causes) > 0 {
			errs := make([]string, 0, len(details.Causes))
			for _, c := range details.Causes {
				if c.Field != "" {
					errs = append(errs, c.Field+": "+c.Message)
				} else {
					errs = append(errs, c.Message)
				}
			}
			return errs, w
		}
	}
	return []string{err.Error()}, w
}

// podTemplate returns the Pod template of a versioned workload object.
func podTemplate(obj runtime.Object) *corev1.PodTemplateSpec {
	switch o := obj.(type) {
	case *appsv1.Deployment:
		return &o.Spec.Template
	}
	return nil
}

var evaluator = func() pspolicy.Evaluator {
	e, err := pspolicy.NewEvaluator(pspolicy.DefaultChecks())
	if err != nil {
		panic(err)
	}
	return e
}()

// podSecurity evaluates a Pod template against the restricted Pod Security
// Standard, and a Namespace's pod-security.kubernetes.io labels.
func podSecurity(obj runtime.Object) []string {
	if ns, ok := obj.(*corev1.Namespace); ok {
		_, errs := psapi.PolicyToEvaluate(ns.Labels, psapi.Policy{})
		out := make([]string, 0, len(errs))
		for _, e := range errs {
			out = append(out, "pod security labels: "+e.Error())
		}
		return out
	}
	tmpl := podTemplate(obj)
	if tmpl == nil {
		return nil
	}
	agg := pspolicy.AggregateCheckResults(evaluator.EvaluatePod(restricted, &tmpl.ObjectMeta, &tmpl.Spec))
	if agg.Allowed {
		return nil
	}
	var out []string
	for i, reason := range agg.ForbiddenReasons {
		out = append(out, fmt.Sprintf("pod security %s:%s: %s (%s)", restricted.Level, restricted.Version, reason, agg.ForbiddenDetails[i]))
	}
	return out
}

// crossCheck adds the errors the API server does not find: named probe
// ports that the container does not declare, and named Service
// targetPorts that no selected Pod template declares.
func crossCheck(results []*result) {
	type podTmpl struct {
		ns   string
		tmpl *corev1.PodTemplateSpec
	}
	var pods []podTmpl
	for _, r := range results {
		if r.obj == nil {
			continue
		}
		tmpl := podTemplate(r.obj)
		if tmpl == nil {
			continue
		}
		accessor, _ := meta.Accessor(r.obj)
		pods = append(pods, podTmpl{accessor.GetNamespace(), tmpl})
		r.errs = append(r.errs, probePorts(tmpl)...)
	}
	for _, r := range results {
		svc, ok := r.obj.(*corev1.Service)
		if !ok || len(svc.Spec.Selector) == 0 {
			continue
		}
		selector := labels.SelectorFromSet(svc.Spec.Selector)
		var selected []*corev1.PodTemplateSpec
		for _, p := range pods {
			if p.ns == svc.Namespace && selector.Matches(labels.Set(p.tmpl.Labels)) {
				selected = append(selected, p.tmpl)
			}
		}
		if len(selected) == 0 {
			continue // the Pods come from elsewhere
		}
		for i, port := range svc.Spec.Ports {
			if port.TargetPort.Type != intstr.String {
				continue
			}
			for _, tmpl := range selected {
				if !declares(tmpl.Spec.Containers, port.TargetPort.StrVal) {
					r.errs = append(r.errs, fmt.Sprintf(
						"spec.ports[%d].targetPort: Not found: %q (not a container port of the selected Pod template with labels %s; checked by manifest-check, not by the API server)",
						i, port.TargetPort.StrVal, labels.Set(tmpl.Labels)))
				}
			}
		}
	}
}

func declares(containers []corev1.Container, name string) bool {
	for _, c := range containers {
		for _, p := range c.Ports {
			if p.Name == name {
				return true
			}
		}
	}
	return false
}

func probePorts(tmpl *corev1.PodTemplateSpec) []string {
	var errs []string
	check := func(path string, port intstr.IntOrString, c corev1.Container) {
		if port.Type == intstr.String && !declares([]corev1.Container{c}, port.StrVal) {
			errs = append(errs, fmt.Sprintf(
				"%s: Not found: %q (no such port in the container; checked by manifest-check, not by the API server)",
				path, port.StrVal))
		}
	}
	for i, c := range tmpl.Spec.Containers {
		probes := map[string]*corev1.Probe{
			"livenessProbe":  c.LivenessProbe,
			"readinessProbe": c.ReadinessProbe,
			"startupProbe":   c.StartupProbe,
		}
		names := make([]string, 0, len(probes))
		for name := range probes {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			p := probes[name]
			if p == nil {
				continue
			}
			base := fmt.Sprintf("spec.template.spec.containers[%d].%s", i, name)
			if p.HTTPGet != nil {
				check(base+".httpGet.port", p.HTTPGet.Port, c)
			}
			if p.TCPSocket != nil {
				check(base+".tcpSocket.port", p.TCPSocket.Port, c)
			}
		}
	}
	return errs
}
