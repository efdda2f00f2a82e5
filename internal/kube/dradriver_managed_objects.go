package kube

import (
	resourcev1 "k8s.io/api/resource/v1"
	resourcev1ac "k8s.io/client-go/applyconfigurations/resource/v1"
	"k8s.io/client-go/kubernetes"
)

// The objects of a DRA driver deployment as managedObjects (see
// deviceplugin_managed_objects.go for the DaemonSet, ServiceAccount and RBAC). A nil configuration
// gives an object that can be read and deleted only.

func deviceClassObject(client kubernetes.Interface, name string, config *resourcev1ac.DeviceClassApplyConfiguration) managedObject {
	return typedObject[resourcev1.DeviceClass]("DeviceClass", "", name, client.ResourceV1().DeviceClasses(), config)
}

// draDriverManagedObjects are spec's objects (objs may be nil: read and
// delete only), in the order they are applied; with every DeviceClass
// the chart has when allClasses, for reading and deleting whichever are
// enabled.
func draDriverManagedObjects(client kubernetes.Interface, s DRADriverSpec, objs *DRADriverObjects, allClasses bool) []managedObject {
	var o DRADriverObjects
	if objs != nil {
		o = *objs
	}
	ns := s.Namespace
	objects := []managedObject{
		serviceAccountObject(client, ns, s.ServiceAccountName(), o.ServiceAccount),
		clusterRoleObject(client, s.ClusterRoleName(), o.ClusterRole),
		clusterRoleBindingObject(client, s.ClusterRoleBindingName(), o.ClusterRoleBinding),
		roleObject(client, ns, s.RoleName(), o.Role),
		roleBindingObject(client, ns, s.RoleBindingName(), o.RoleBinding),
		daemonSetObject(client, ns, s.DaemonSetName(), o.DaemonSet),
	}
	classes := s.DeviceClasses
	if allClasses {
		classes = DRADeviceClasses
	}
	for i, class := range classes {
		var config *resourcev1ac.DeviceClassApplyConfiguration
		if i < len(o.DeviceClasses) && !allClasses {
			config = o.DeviceClasses[i]
		}
		objects = append(objects, deviceClassObject(client, class, config))
	}
	return objects
}
