package aws

import (
	"context"
	"sync"

	"k8s.io/klog/v2"

	awsv1 "github.com/tailor-sh/tailor/pkg/apis/aws/v1"
	karpv1 "github.com/tailor-sh/tailor/pkg/apis/karpenter/v1"
	"github.com/tailor-sh/tailor/pkg/cloud"
)

// declaredDevices applies the device templates users declare on an EC2NodeClass and a NodePool
// (cloud.DevicesAnnotation) over the built-in devices of the types. The types are shared by
// every pool, so a type whose devices a template changes is copied; the copies are kept, one per
// type and declaration, so that every call for the same declarations returns the same types.
type declaredDevices struct {
	mu     sync.Mutex
	copies map[declaredKey]*cloud.InstanceType
}

type declaredKey struct {
	it          *cloud.InstanceType
	class, pool string
}

// maxDeclaredCopies bounds the copies kept: past it (the catalog refreshed many times, the
// declarations edited often) they are made anew.
const maxDeclaredCopies = 20000

// apply returns types with the templates of nc and pool applied. A declaration that does not
// parse is an error naming the object, the annotation and the entry at fault: the pool is left
// out of plans with that reason (its pods' FailedProvisioning Events say it), rather than planned
// with devices its nodes will not have.
func (d *declaredDevices) apply(ctx context.Context, nc *awsv1.EC2NodeClass, pool *karpv1.NodePool, types []*cloud.InstanceType) ([]*cloud.InstanceType, error) {
	classText, poolText := nc.Annotations[cloud.DevicesAnnotation], pool.Annotations[cloud.DevicesAnnotation]
	if classText == "" && poolText == "" {
		return types, nil
	}
	var templates []cloud.DeviceTemplate
	for _, src := range []struct{ kind, name, text string }{{"EC2NodeClass", nc.Name, classText}, {"NodePool", pool.Name, poolText}} {
		if src.text == "" {
			continue
		}
		t, err := cloud.ParseDeviceTemplates(src.kind, src.name, src.text)
		if err != nil {
			klog.FromContext(ctx).Error(err, "Invalid device templates; the NodePool is left out of plans", "nodePool", pool.Name, "ec2NodeClass", nc.Name)
			return nil, &cloud.NodeClassNotReadyError{Kind: src.kind, Name: src.name, Reason: "InvalidDeviceTemplates", Message: err.Error()}
		}
		templates = append(templates, t...)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.copies == nil || len(d.copies) > maxDeclaredCopies {
		d.copies = map[declaredKey]*cloud.InstanceType{}
	}
	out := make([]*cloud.InstanceType, len(types))
	for i, it := range types {
		key := declaredKey{it: it, class: classText, pool: poolText}
		if c, ok := d.copies[key]; ok {
			out[i] = c
			continue
		}
		out[i] = it
		if sets, changed := cloud.ApplyDeviceTemplates(it.Name, it.Devices, templates); changed {
			c := *it
			c.Devices = sets
			out[i] = &c
		}
		d.copies[key] = out[i]
	}
	return out, nil
}
