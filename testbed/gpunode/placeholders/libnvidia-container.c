/* Stands in for libnvidia-container.so.1 and libnvidia-container-go.so.1 in the toolkit
 * operand's image (see nvidia-container-cli.c): the installer copies them
 * (cmd/nvidia-ctk-installer/toolkit/installer/libraries.go); only nvidia-container-cli, never
 * run in CDI mode, would load them. It exports nothing, so a program that needs them fails at
 * load time. */
const char gpuconform_placeholder[] = "libnvidia-container placeholder: not built in this test bed";
