/* Stands in for libnvidia-container's nvidia-container-cli in the toolkit operand's image
 * (testbed/gpunode/README.md): libnvidia-container is C, not in the Go module proxy, and not
 * packaged by Debian. The toolkit's installer refuses to finish without the file
 * (cmd/nvidia-ctk-installer/toolkit/installer/executables.go); in CDI mode, which this node
 * runs, the runtime never calls it. If anything does, it fails loudly rather than pretend. */
#include <stdio.h>

int main(void)
{
    fputs("nvidia-container-cli: not built in this test bed (libnvidia-container is C and not "
          "served here); the node runs the toolkit in CDI mode, which does not use it\n", stderr);
    return 1;
}
