"""CuTe DSL kernels (sm_90a). Each kernel is a class: static configuration in __init__, layouts
and launch in a @cute.jit __call__, the body in a @cute.kernel."""
