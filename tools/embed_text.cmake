# Writes a C++ source that defines `extern const char SYMBOL[]` holding the bytes of INPUT.
# Usage: cmake -DINPUT=file -DOUTPUT=file.cc -DSYMBOL=name -P embed_text.cmake
file(READ ${INPUT} content HEX)
string(LENGTH "${content}" hex_length)
math(EXPR byte_count "${hex_length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${content}")
file(WRITE ${OUTPUT}
  "// Generated from ${INPUT}; do not edit.\n#include <cstddef>\n"
  "namespace attune {\nextern const char ${SYMBOL}[];\nextern const std::size_t ${SYMBOL}_size;\n"
  "const char ${SYMBOL}[] = {${bytes} '\\0'};\n"
  "const std::size_t ${SYMBOL}_size = ${byte_count};\n}  // namespace attune\n")
