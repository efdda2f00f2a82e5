package k8s

// The annotations that make kwok fail a pod's containers, as if they had
// exited (see the package comment), or keep a Job's pod running. Put them on a pod template's metadata
// (a Job's, a Deployment's); kwok reads them when the pod is bound to one
// of its nodes, or when they are added to a pod it runs.
const (
	// FailExitCodeAnnotation makes every container of the pod exit with
	// this code, a non-zero integer (anything else counts as 1). With
	// restartPolicy Never the pod fails; with Always or OnFailure it
	// crash-loops.
	FailExitCodeAnnotation = "testbed.gpuinfra.io/fail-exit-code"
	// FailMessageAnnotation is the termination message the exiting
	// containers leave, as if written to their terminationMessagePath
	// (the kubelet keeps its last 4096 bytes). Optional.
	FailMessageAnnotation = "testbed.gpuinfra.io/fail-message"

	// KeepRunningAnnotation keeps a Job's pod Running (as a training run
	// that takes hours) instead of Succeeding as soon as it runs; it still
	// fails when FailExitCodeAnnotation is added, e.g. by a GPU fault
	// (health_agent_pod_failures.go). The value is not read.
	KeepRunningAnnotation = "testbed.gpuinfra.io/keep-running"
)
