/* Link check of one layer (CMakeLists.txt): the whole layer archive is linked with only the layers it
 * declares, so any symbol it takes from an undeclared layer is an undefined reference. */
int main(void) { return 0; }
