package checkpoint_test

import "unsafe"

func unsafePtr(b []byte) unsafe.Pointer { return unsafe.Pointer(unsafe.SliceData(b)) }
