package k8s

// The annotations that make kwok fail a pod's containers, as if they had
// exited (see the package comment). Put them on a pod template's metadata
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
)
