# Writes a C++ source defining attune::sim::preset_files(): every models/*.toml, stacks/*.toml,
# hardware/*.toml and recipes/*.sh, and published/rows.tsv, under DATA_DIR as {path relative to
# DATA_DIR, text}.
# Usage: cmake -DDATA_DIR=dir -DOUTPUT=file.cc -P embed_data.cmake
file(GLOB files RELATIVE ${DATA_DIR}
     ${DATA_DIR}/models/*.toml ${DATA_DIR}/hardware/*.toml ${DATA_DIR}/stacks/*.toml
     ${DATA_DIR}/recipes/*.sh
     ${DATA_DIR}/published/rows.tsv)
list(SORT files)
set(arrays "")
set(entries "")
set(index 0)
foreach(file ${files})
  file(READ ${DATA_DIR}/${file} content HEX)
  string(LENGTH "${content}" hex_length)
  math(EXPR byte_count "${hex_length} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "'\\\\x\\1'," bytes "${content}")
  string(APPEND arrays "const char kFile${index}[] = {${bytes} '\\0'};\n")
  string(APPEND entries "    {\"${file}\", std::string_view(kFile${index}, ${byte_count})},\n")
  math(EXPR index "${index} + 1")
endforeach()
file(WRITE ${OUTPUT}.tmp
  "// Generated from ${DATA_DIR} by embed_data.cmake; do not edit.\n"
  "#include \"adapters/model/preset_files.h\"\n\n"
  "namespace attune::sim {\nnamespace {\n${arrays}\n"
  "const PresetFile kFiles[] = {\n${entries}};\n}  // namespace\n\n"
  "std::span<const PresetFile> preset_files() { return kFiles; }\n\n}  // namespace attune::sim\n")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUTPUT}.tmp)
