// The upstream half of the differential conversion test (tests/unit/translate/test_conversion_differential.py).
//
// testenv/cluster/convdiff.py copies this file into a copy of cluster-api's own conversion package
// (sigs.k8s.io/cluster-api/core/webhooks/conversion, version as pinned in ../go.mod), beside upstream's
// conversion_test.go, and builds the package's test binary. So the conversions below are upstream's own
// Convert*V1Beta1ToHub / Convert*HubToV1Beta1 functions, and the "upstream" fill uses upstream's own fuzzer
// functions (ClusterFuzzFuncs, ...); nothing here re-implements a rule.
//
// Run: <binary> -test.run '^TestConvDiff$' with CONVDIFF_REQUESTS (JSON lines in) and CONVDIFF_RESULTS (JSON
// lines out, one per request). Requests:
//   {"op": "generate", "kind": K, "version": "v1beta1"|"v1beta2", "fill": "upstream"|"sparse", "seed": N, "count": M}
//       -> {"objects": [...]}    M objects of kind K in that version, encoded as the webhook would receive them
//   {"op": "convert", "to": "v1beta1"|"v1beta2", "object": {...}}
//       -> {"object": {...}} or {"error": "..."}
//   {"op": "canonical", "object": {...}}
//       -> {"object": {...}} or {"error": "..."}  the object as a Go client of its version decodes it, encoded again
//   {"op": "ref_versions"} -> {"ref_versions": {"<group>/<Kind>": "<version>"}} (the test's contract versions)

package conversion

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"reflect"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	"k8s.io/apimachinery/pkg/runtime/schema"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/randfill"

	conversionutil "sigs.k8s.io/cluster-api/util/conversion"
)

const diffGroup = "cluster.x-k8s.io"

type diffKind struct {
	newHub   func() client.Object
	newSpoke func() client.Object
	up       func(context.Context, client.Object, client.Object) error
	down     func(context.Context, client.Object, client.Object) error
	funcs    []fuzzer.FuzzerFuncs
}

func newOf[T client.Object]() client.Object {
	return reflect.New(reflect.TypeOf(*new(T)).Elem()).Interface().(T)
}

func kindOf[H, S client.Object](up func(context.Context, S, H) error, down func(context.Context, H, S) error, funcs ...fuzzer.FuzzerFuncs) diffKind {
	return diffKind{
		newHub:   newOf[H],
		newSpoke: newOf[S],
		up:       func(ctx context.Context, s, h client.Object) error { return up(ctx, s.(S), h.(H)) },
		down:     func(ctx context.Context, h, s client.Object) error { return down(ctx, h.(H), s.(S)) },
		funcs:    funcs,
	}
}

var diffKinds = map[string]diffKind{
	"Cluster":            kindOf(ConvertClusterV1Beta1ToHub, ConvertClusterHubToV1Beta1, ClusterFuzzFuncs),
	"Machine":            kindOf(ConvertMachineV1Beta1ToHub, ConvertMachineHubToV1Beta1, MachineFuzzFuncs),
	"MachineSet":         kindOf(ConvertMachineSetV1Beta1ToHub, ConvertMachineSetHubToV1Beta1, MachineSetFuzzFuncs),
	"MachineDeployment":  kindOf(ConvertMachineDeploymentV1Beta1ToHub, ConvertMachineDeploymentHubToV1Beta1, MachineDeploymentFuzzFuncs),
	"MachineHealthCheck": kindOf(ConvertMachineHealthCheckV1Beta1ToHub, ConvertMachineHealthCheckHubToV1Beta1, MachineHealthCheckFuzzFuncs),
	"MachinePool":        kindOf(ConvertMachinePoolV1Beta1ToHub, ConvertMachinePoolHubToV1Beta1, MachinePoolFuzzFuncs),
	"MachineDrainRule":   kindOf(ConvertMachineDrainRuleV1Beta1ToHub, ConvertMachineDrainRuleHubToV1Beta1),
}

// sparseFuncs keep the unconstrained fill encodable: a variable's value must be JSON to be marshalled at all.
func sparseFuncs(_ runtimeserializer.CodecFactory) []interface{} {
	return []interface{}{
		func(in *apiextensionsv1.JSON, c randfill.Continue) {
			in.Raw = []byte(fmt.Sprintf(`{"v":%d}`, c.Int31n(100)))
		},
	}
}

func filler(k diffKind, fill string, seed int64) (*randfill.Filler, error) {
	switch fill {
	case "upstream":
		return conversionutil.GetFuzzer(nil, k.funcs...).RandSource(rand.NewSource(seed)), nil
	case "sparse":
		return conversionutil.GetFuzzer(nil, sparseFuncs).RandSource(rand.NewSource(seed)).NilChance(0.7).NumElements(0, 2), nil
	}
	return nil, fmt.Errorf("unknown fill %q", fill)
}

func encode(obj client.Object, kind, version string) (map[string]interface{}, error) {
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	out := map[string]interface{}{}
	if err := utiljson.Unmarshal(raw, &out); err != nil {
		return nil, err
	}
	out["apiVersion"] = diffGroup + "/" + version
	out["kind"] = kind
	return out, nil
}

func generate(req map[string]interface{}) (map[string]interface{}, error) {
	kind, _ := req["kind"].(string)
	k, ok := diffKinds[kind]
	if !ok {
		return nil, fmt.Errorf("unknown kind %q", kind)
	}
	version, _ := req["version"].(string)
	fill, _ := req["fill"].(string)
	seed, _ := req["seed"].(int64)
	count, _ := req["count"].(int64)
	f, err := filler(k, fill, int64(seed))
	if err != nil {
		return nil, err
	}
	objects := []interface{}{}
	for range int(count) {
		obj := k.newSpoke()
		if version == "v1beta2" {
			obj = k.newHub()
		}
		f.Fill(obj)
		encoded, err := encode(obj, kind, version)
		if err != nil {
			return nil, err
		}
		objects = append(objects, encoded)
	}
	return map[string]interface{}{"objects": objects}, nil
}

func convert(req map[string]interface{}) (map[string]interface{}, error) {
	to, _ := req["to"].(string)
	object, _ := req["object"].(map[string]interface{})
	kind, _ := object["kind"].(string)
	k, ok := diffKinds[kind]
	if !ok {
		return nil, fmt.Errorf("unknown kind %q", kind)
	}
	raw, err := json.Marshal(object)
	if err != nil {
		return nil, err
	}
	src, dst, step := k.newHub(), k.newSpoke(), k.down
	if to == "v1beta2" {
		src, dst, step = k.newSpoke(), k.newHub(), k.up
	}
	if err := utiljson.Unmarshal(raw, src); err != nil {
		return map[string]interface{}{"error": "decode: " + err.Error()}, nil
	}
	if err := step(context.Background(), src, dst); err != nil {
		return map[string]interface{}{"error": err.Error()}, nil
	}
	encoded, err := encode(dst, kind, to)
	if err != nil {
		return nil, err
	}
	return map[string]interface{}{"object": encoded}, nil
}

func canonical(req map[string]interface{}) (map[string]interface{}, error) {
	object, _ := req["object"].(map[string]interface{})
	kind, _ := object["kind"].(string)
	apiVersion, _ := object["apiVersion"].(string)
	k, ok := diffKinds[kind]
	if !ok {
		return nil, fmt.Errorf("unknown kind %q", kind)
	}
	obj, version := k.newSpoke(), "v1beta1"
	if apiVersion == diffGroup+"/v1beta2" {
		obj, version = k.newHub(), "v1beta2"
	}
	raw, err := json.Marshal(object)
	if err != nil {
		return nil, err
	}
	if err := utiljson.Unmarshal(raw, obj); err != nil {
		return map[string]interface{}{"error": "decode: " + err.Error()}, nil
	}
	encoded, err := encode(obj, kind, version)
	if err != nil {
		return nil, err
	}
	return map[string]interface{}{"object": encoded}, nil
}

func refVersions() map[string]interface{} {
	out := map[string]interface{}{}
	for _, gvk := range testGVKs {
		out[gvk.Group+"/"+gvk.Kind] = gvk.Version
	}
	return map[string]interface{}{"ref_versions": out}
}

func TestConvDiff(t *testing.T) {
	in, out := os.Getenv("CONVDIFF_REQUESTS"), os.Getenv("CONVDIFF_RESULTS")
	if in == "" || out == "" {
		t.Skip("CONVDIFF_REQUESTS and CONVDIFF_RESULTS not set")
	}
	SetAPIVersionGetter(func(_ context.Context, gk schema.GroupKind) (string, error) {
		for _, gvk := range testGVKs {
			if gvk.GroupKind() == gk {
				return gvk.GroupVersion().String(), nil
			}
		}
		return "", fmt.Errorf("failed to map GroupKind %s to version", gk.String())
	})
	reqFile, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer reqFile.Close()
	resFile, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer resFile.Close()
	writer := bufio.NewWriter(resFile)
	defer writer.Flush()
	scanner := bufio.NewScanner(reqFile)
	scanner.Buffer(make([]byte, 1<<20), 1<<30)
	encoder := json.NewEncoder(writer)
	for scanner.Scan() {
		req := map[string]interface{}{}
		if err := utiljson.Unmarshal(scanner.Bytes(), &req); err != nil {
			t.Fatal(err)
		}
		var res map[string]interface{}
		switch req["op"] {
		case "generate":
			res, err = generate(req)
		case "convert":
			res, err = convert(req)
		case "canonical":
			res, err = canonical(req)
		case "ref_versions":
			res = refVersions()
		default:
			err = fmt.Errorf("unknown op %v", req["op"])
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := encoder.Encode(res); err != nil {
			t.Fatal(err)
		}
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}
}
