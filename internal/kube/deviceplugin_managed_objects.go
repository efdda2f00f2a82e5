package kube

import (
	"context"
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	nodev1ac "k8s.io/client-go/applyconfigurations/node/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/kubernetes"
)

// The objects of a device plugin deployment as managedObjects. A nil
// configuration gives an object that can be read and deleted only (a
// component the spec no longer has).

// typedAPI is what client-go's typed client of one kind offers: T the
// object, AC its apply configuration.
type typedAPI[T any, PT interface {
	*T
	metav1.Object
	runtime.Object
}, AC any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (PT, error)
	Create(ctx context.Context, obj PT, opts metav1.CreateOptions) (PT, error)
	Apply(ctx context.Context, config AC, opts metav1.ApplyOptions) (PT, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (PT, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// typedObject is the managedObject of one object of a client-go typed
// client; config may be nil for read and delete only.
func typedObject[T any, PT interface {
	*T
	metav1.Object
	runtime.Object
}, AC any](kind, namespace, name string, api typedAPI[T, PT, AC], config AC) managedObject {
	return managedObject{
		kind: kind, namespace: namespace, name: name,
		get: func(ctx context.Context) (metav1.Object, error) { return api.Get(ctx, name, metav1.GetOptions{}) },
		create: func(ctx context.Context) (metav1.Object, error) {
			obj, err := asObject[T](config)
			if err != nil {
				return nil, err
			}
			created, err := api.Create(ctx, obj, metav1.CreateOptions{FieldManager: FieldManager})
			if err != nil {
				return nil, err
			}
			return created, ownCreatedFieldsAsApplier(ctx, created,
				func(ctx context.Context) (runtime.Object, error) { return api.Get(ctx, name, metav1.GetOptions{}) },
				func(ctx context.Context, patch []byte) error {
					_, err := api.Patch(ctx, name, types.JSONPatchType, patch, metav1.PatchOptions{})
					return err
				})
		},
		apply: func(ctx context.Context, opts metav1.ApplyOptions) error {
			_, err := api.Apply(ctx, config, opts)
			return err
		},
		delete: func(ctx context.Context, opts metav1.DeleteOptions) error { return api.Delete(ctx, name, opts) },
	}
}

func runtimeClassObject(client kubernetes.Interface, name string, config *nodev1ac.RuntimeClassApplyConfiguration) managedObject {
	return typedObject[nodev1.RuntimeClass]("RuntimeClass", "", name, client.NodeV1().RuntimeClasses(), config)
}

func configMapObject(client kubernetes.Interface, namespace, name string, config *corev1ac.ConfigMapApplyConfiguration) managedObject {
	return typedObject[corev1.ConfigMap]("ConfigMap", namespace, name, client.CoreV1().ConfigMaps(namespace), config)
}

func daemonSetObject(client kubernetes.Interface, namespace, name string, config *appsv1ac.DaemonSetApplyConfiguration) managedObject {
	return typedObject[appsv1.DaemonSet]("DaemonSet", namespace, name, client.AppsV1().DaemonSets(namespace), config)
}

func serviceAccountObject(client kubernetes.Interface, namespace, name string, config *corev1ac.ServiceAccountApplyConfiguration) managedObject {
	return typedObject[corev1.ServiceAccount]("ServiceAccount", namespace, name, client.CoreV1().ServiceAccounts(namespace), config)
}

func clusterRoleObject(client kubernetes.Interface, name string, config *rbacv1ac.ClusterRoleApplyConfiguration) managedObject {
	return typedObject[rbacv1.ClusterRole]("ClusterRole", "", name, client.RbacV1().ClusterRoles(), config)
}

func clusterRoleBindingObject(client kubernetes.Interface, name string, config *rbacv1ac.ClusterRoleBindingApplyConfiguration) managedObject {
	return typedObject[rbacv1.ClusterRoleBinding]("ClusterRoleBinding", "", name, client.RbacV1().ClusterRoleBindings(), config)
}

func roleObject(client kubernetes.Interface, namespace, name string, config *rbacv1ac.RoleApplyConfiguration) managedObject {
	return typedObject[rbacv1.Role]("Role", namespace, name, client.RbacV1().Roles(namespace), config)
}

func roleBindingObject(client kubernetes.Interface, namespace, name string, config *rbacv1ac.RoleBindingApplyConfiguration) managedObject {
	return typedObject[rbacv1.RoleBinding]("RoleBinding", namespace, name, client.RbacV1().RoleBindings(namespace), config)
}

func deploymentObject(client kubernetes.Interface, namespace, name string, config *appsv1ac.DeploymentApplyConfiguration) managedObject {
	return typedObject[appsv1.Deployment]("Deployment", namespace, name, client.AppsV1().Deployments(namespace), config)
}

func serviceObject(client kubernetes.Interface, namespace, name string, config *corev1ac.ServiceApplyConfiguration) managedObject {
	return typedObject[corev1.Service]("Service", namespace, name, client.CoreV1().Services(namespace), config)
}

// serviceMonitorObject is the Prometheus Operator's ServiceMonitor, written
// through the raw REST client (the provider carries no client for that API
// group); body is its JSON, nil for read and delete only.
func serviceMonitorObject(client kubernetes.Interface, namespace, name string, body []byte) managedObject {
	collection := "/apis/" + serviceMonitorGroupVersion + "/namespaces/" + namespace + "/" + serviceMonitorResource
	return rawObject(client, "ServiceMonitor", namespace, name, collection, body)
}

// rawObject is an object of an API the provider carries no typed client
// for, at collection/name, written through the raw REST client as JSON;
// body is its JSON, nil for read and delete only.
func rawObject(client kubernetes.Interface, kind, namespace, name, collection string, body []byte) managedObject {
	rest := client.Discovery().RESTClient()
	path := collection + "/" + name
	partialOf := func(raw []byte, err error) (*metav1.PartialObjectMetadata, error) {
		if err != nil {
			return nil, err
		}
		var obj metav1.PartialObjectMetadata
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, err
		}
		return &obj, nil
	}
	metadataOf := func(raw []byte, err error) (metav1.Object, error) {
		obj, err := partialOf(raw, err)
		if err != nil {
			return nil, err
		}
		return &obj.ObjectMeta, nil
	}
	return managedObject{
		kind: kind, namespace: namespace, name: name,
		get: func(ctx context.Context) (metav1.Object, error) {
			return metadataOf(rest.Get().AbsPath(path).Do(ctx).Raw())
		},
		create: func(ctx context.Context) (metav1.Object, error) {
			created, err := partialOf(rest.Post().AbsPath(collection).Param("fieldManager", FieldManager).
				SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Raw())
			if err != nil {
				return nil, err
			}
			return &created.ObjectMeta, ownCreatedFieldsAsApplier(ctx, created,
				func(ctx context.Context) (runtime.Object, error) {
					return partialOf(rest.Get().AbsPath(path).Do(ctx).Raw())
				},
				func(ctx context.Context, patch []byte) error {
					return rest.Patch(types.JSONPatchType).AbsPath(path).Body(patch).Do(ctx).Error()
				})
		},
		apply: func(ctx context.Context, opts metav1.ApplyOptions) error {
			req := rest.Patch(types.ApplyPatchType).AbsPath(path).Param("fieldManager", opts.FieldManager).Body(body)
			if opts.Force {
				req = req.Param("force", "true")
			}
			return req.Do(ctx).Error()
		},
		delete: func(ctx context.Context, opts metav1.DeleteOptions) error {
			data, err := json.Marshal(opts)
			if err != nil {
				return err
			}
			return rest.Delete().AbsPath(path).SetHeader("Content-Type", "application/json").Body(data).Do(ctx).Error()
		},
	}
}
